"""Keep-alive behaviour of a small HTTP/1.1 server written on asyncio streams.

Modelled on the functional keep-alive tests of micro web frameworks (aiohttp's
``test_web_functional``, uvicorn's h11 tests).  One TCP connection is reused for
requests that are separated by real sleeps.  The server closes idle
connections after its keep-alive timeout, honours ``Connection: close`` and
answers pipelined requests in order.
"""

import asyncio
import time

import pytest
import pytest_asyncio


class MiniHTTPServer:
    """HTTP/1.1 server with keep-alive, Content-Length bodies and an idle timeout."""

    def __init__(self, keepalive_timeout=30.0):
        self.keepalive_timeout = keepalive_timeout
        self.routes = {}
        self.connections_accepted = 0
        self.requests_served = 0
        self.peers = []
        self._handlers = set()
        self._writers = set()
        self._server = None
        self.port = None

    def route(self, method, path):
        def register(fn):
            self.routes[(method, path)] = fn
            return fn

        return register

    async def start(self):
        self._server = await asyncio.start_server(self._serve_connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self):
        self._server.close()
        await self._server.wait_closed()
        for writer in list(self._writers):
            writer.close()
        if self._handlers:
            await asyncio.wait(list(self._handlers), timeout=10)

    @staticmethod
    async def _read_request(reader):
        request_line = await reader.readline()
        if not request_line:
            return None
        method, target, _version = request_line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        headers = {}
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        body = await reader.readexactly(length) if length else b""
        return method, target, headers, body

    async def _serve_connection(self, reader, writer):
        self._handlers.add(asyncio.current_task())
        self._writers.add(writer)
        self.connections_accepted += 1
        self.peers.append(writer.get_extra_info("peername"))
        try:
            while True:
                try:
                    request = await asyncio.wait_for(
                        self._read_request(reader), self.keepalive_timeout
                    )
                except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    break
                if request is None:
                    break
                method, target, headers, body = request
                handler = self.routes.get((method, target))
                if handler is None:
                    status, payload = 404, b"not found"
                else:
                    status, payload = await handler(headers, body)
                keep_alive = headers.get("connection", "keep-alive").lower() != "close"
                reason = {200: "OK", 404: "Not Found"}.get(status, "Unknown")
                head = (
                    f"HTTP/1.1 {status} {reason}\r\n"
                    f"Content-Length: {len(payload)}\r\n"
                    f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
                )
                writer.write(head.encode("latin-1") + payload)
                await writer.drain()
                self.requests_served += 1
                if not keep_alive:
                    break
        finally:
            self._writers.discard(writer)
            writer.close()
            try:
                await writer.wait_closed()
            except ConnectionError:
                pass
            self._handlers.discard(asyncio.current_task())


class HTTPConnection:
    """Client side of one persistent connection."""

    def __init__(self, reader, writer):
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    @property
    def local_port(self):
        return self.writer.get_extra_info("sockname")[1]

    @staticmethod
    def encode_request(method, path, body=b"", headers=None):
        lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        if body:
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def read_response(self):
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("server closed the connection")
        status = int(status_line.split()[1])
        headers = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        return status, headers, body

    async def request(self, method, path, body=b"", headers=None):
        self.writer.write(self.encode_request(method, path, body, headers))
        await self.writer.drain()
        return await self.read_response()

    async def close(self):
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass


def add_default_routes(srv):
    @srv.route("GET", "/hello")
    async def hello(headers, body):
        return 200, b"hello"

    @srv.route("POST", "/echo")
    async def echo(headers, body):
        return 200, body

    @srv.route("GET", "/slow")
    async def slow(headers, body):
        await asyncio.sleep(0.2)
        return 200, b"slow"


@pytest_asyncio.fixture
async def make_server():
    servers = []

    async def factory(**kwargs):
        srv = MiniHTTPServer(**kwargs)
        add_default_routes(srv)
        servers.append(srv)
        return await srv.start()

    yield factory
    for srv in servers:
        await srv.close()


@pytest_asyncio.fixture
async def server(make_server):
    return await make_server()


@pytest.mark.asyncio
async def test_get_returns_body(server):
    conn = await HTTPConnection.open(server.port)
    try:
        status, headers, body = await asyncio.wait_for(conn.request("GET", "/hello"), 10)
    finally:
        await conn.close()
    assert status == 200
    assert body == b"hello"
    assert headers["connection"] == "keep-alive"


@pytest.mark.asyncio
async def test_connection_reused_across_sleeps(server):
    conn = await HTTPConnection.open(server.port)
    local_port = conn.local_port
    try:
        for pause in (0.5, 0.8):
            status, _, body = await asyncio.wait_for(conn.request("GET", "/hello"), 10)
            assert (status, body) == (200, b"hello")
            await asyncio.sleep(pause)
        status, _, body = await asyncio.wait_for(conn.request("GET", "/hello"), 10)
        assert (status, body) == (200, b"hello")
    finally:
        await conn.close()
    assert conn.local_port == local_port
    assert server.connections_accepted == 1
    assert server.requests_served == 3


@pytest.mark.asyncio
async def test_idle_connection_closed_after_keepalive_timeout(make_server):
    srv = await make_server(keepalive_timeout=0.5)
    conn = await HTTPConnection.open(srv.port)
    try:
        started = time.monotonic()
        status, _, _ = await asyncio.wait_for(conn.request("GET", "/hello"), 10)
        assert status == 200
        # The server arms its idle timer after it has read the request, which is
        # after `started`; EOF therefore cannot arrive before 0.5 s have passed.
        leftover = await asyncio.wait_for(conn.reader.read(), 10)
        elapsed = time.monotonic() - started
    finally:
        await conn.close()
    assert leftover == b""
    assert conn.reader.at_eof()
    assert 0.5 - 0.01 <= elapsed < 10


@pytest.mark.asyncio
async def test_connection_close_header_ends_connection(server):
    conn = await HTTPConnection.open(server.port)
    try:
        status, headers, body = await asyncio.wait_for(
            conn.request("GET", "/hello", headers={"Connection": "close"}), 10
        )
        rest = await asyncio.wait_for(conn.reader.read(), 10)
    finally:
        await conn.close()
    assert (status, body) == (200, b"hello")
    assert headers["connection"] == "close"
    assert rest == b""


@pytest.mark.asyncio
async def test_pipelined_requests_are_answered_in_order(server):
    conn = await HTTPConnection.open(server.port)
    try:
        conn.writer.write(
            HTTPConnection.encode_request("GET", "/slow")
            + HTTPConnection.encode_request("POST", "/echo", b"second")
            + HTTPConnection.encode_request("GET", "/missing")
        )
        await conn.writer.drain()
        responses = [await asyncio.wait_for(conn.read_response(), 10) for _ in range(3)]
    finally:
        await conn.close()
    assert [(status, body) for status, _, body in responses] == [
        (200, b"slow"),
        (200, b"second"),
        (404, b"not found"),
    ]


@pytest.mark.asyncio
async def test_large_post_body_round_trips(server):
    payload = bytes(range(256)) * 1024  # 256 KiB
    conn = await HTTPConnection.open(server.port)
    try:
        status, headers, body = await asyncio.wait_for(conn.request("POST", "/echo", payload), 10)
    finally:
        await conn.close()
    assert status == 200
    assert int(headers["content-length"]) == len(payload)
    assert body == payload


@pytest.mark.asyncio
async def test_concurrent_clients_keep_their_own_connections(server):
    async def client(n):
        conn = await HTTPConnection.open(server.port)
        try:
            first = await conn.request("POST", "/echo", f"client-{n}-a".encode())
            await asyncio.sleep(0.5)
            second = await conn.request("POST", "/echo", f"client-{n}-b".encode())
            return conn.local_port, first[2], second[2]
        finally:
            await conn.close()

    started = time.monotonic()
    results = await asyncio.wait_for(asyncio.gather(*(client(n) for n in range(5))), 20)
    elapsed = time.monotonic() - started
    assert [r[1:] for r in results] == [
        (f"client-{n}-a".encode(), f"client-{n}-b".encode()) for n in range(5)
    ]
    assert len({r[0] for r in results}) == 5
    assert server.connections_accepted == 5
    assert server.requests_served == 10
    assert 0.5 - 0.01 <= elapsed < 10
