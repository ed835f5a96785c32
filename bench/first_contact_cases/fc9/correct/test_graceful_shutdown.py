"""Graceful shutdown of an asyncio HTTP server with requests still in flight.

The shutdown sequence follows uvicorn/hypercorn/aiohttp ``GracefulExit``:

1. stop listening;
2. close idle keep-alive connections;
3. let in-flight requests finish, answering them with ``Connection: close``;
4. cancel whatever is still running after the grace period, answering 503.

Each test waits for server-side events, not for guessed delays.  The only
timing assertions are lower bounds that come from the handlers' own sleeps.
"""

import asyncio
import time

import pytest
import pytest_asyncio


class Conn:
    def __init__(self, writer):
        self.writer = writer
        self.idle = True
        self.task = asyncio.current_task()


class GracefulServer:
    def __init__(self):
        self.shutting_down = False
        self.conns = set()
        self.cancelled_requests = 0
        self.completed_requests = 0
        self.request_started = asyncio.Event()
        self.listener_closed = asyncio.Event()

    async def start(self):
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def shutdown(self, grace):
        self.shutting_down = True
        self._server.close()
        self.listener_closed.set()
        for conn in list(self.conns):
            if conn.idle:
                conn.writer.close()
        tasks = [c.task for c in self.conns]
        pending = set()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await self._server.wait_closed()

    async def _respond(self, writer, status, body, close):
        head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n"
        head += "Connection: close\r\n\r\n" if close else "\r\n"
        writer.write(head.encode() + body)
        await writer.drain()

    async def _handle(self, reader, writer):
        conn = Conn(writer)
        self.conns.add(conn)
        try:
            while not self.shutting_down:
                conn.idle = True
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                conn.idle = False
                path = head.split(b" ", 2)[1].decode()
                self.request_started.set()
                try:
                    if path.startswith("/work/"):
                        await asyncio.sleep(int(path.rsplit("/", 1)[1]) / 1000)
                    elif path.startswith("/stream/"):
                        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                        for n in range(int(path.rsplit("/", 1)[1])):
                            await asyncio.sleep(0.05)
                            chunk = f"part{n};".encode()
                            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                            await writer.drain()
                        writer.write(b"0\r\n\r\n")
                        await writer.drain()
                        self.completed_requests += 1
                        continue
                except asyncio.CancelledError:
                    self.cancelled_requests += 1
                    writer.write(b"HTTP/1.1 503 X\r\nContent-Length: 13\r\n"
                                 b"Connection: close\r\n\r\nshutting down")
                    raise
                self.completed_requests += 1
                await self._respond(writer, 200, path.encode(), close=self.shutting_down)
        finally:
            self.conns.discard(conn)
            writer.close()


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = {}
    for line in head.decode().split("\r\n")[1:]:
        if line:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            size = int((await reader.readline()).strip(), 16)
            data = await reader.readexactly(size + 2)
            if size == 0:
                break
            body += data[:-2]
    else:
        body = await reader.readexactly(int(headers["content-length"]))
    return status, headers, body


@pytest_asyncio.fixture
async def server():
    srv = await GracefulServer().start()
    yield srv
    if not srv.shutting_down:
        await srv.shutdown(grace=1)


@pytest_asyncio.fixture
async def open_client(server):
    writers = []

    async def connect():
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writers.append(writer)
        return reader, writer

    yield connect
    for writer in writers:
        writer.close()
        try:
            await writer.wait_closed()
        except ConnectionError:
            pass


@pytest.mark.asyncio
async def test_in_flight_request_completes_before_shutdown_returns(server, open_client):
    reader, writer = await open_client()
    started = time.monotonic()
    writer.write(b"GET /work/300 HTTP/1.1\r\nHost: x\r\n\r\n")
    await asyncio.wait_for(server.request_started.wait(), 10)
    shutdown = asyncio.create_task(server.shutdown(grace=30))
    status, headers, body = await asyncio.wait_for(read_response(reader), 10)
    await asyncio.wait_for(shutdown, 30)
    assert (status, body) == (200, b"/work/300")
    assert headers["connection"] == "close"
    assert await asyncio.wait_for(reader.read(), 10) == b""
    assert server.completed_requests == 1
    assert server.cancelled_requests == 0
    assert time.monotonic() - started >= 0.3 - 0.01


@pytest.mark.asyncio
async def test_listener_is_closed_once_shutdown_starts(server, open_client):
    reader, writer = await open_client()
    writer.write(b"GET /work/200 HTTP/1.1\r\nHost: x\r\n\r\n")
    await asyncio.wait_for(server.request_started.wait(), 10)
    shutdown = asyncio.create_task(server.shutdown(grace=30))
    await asyncio.wait_for(server.listener_closed.wait(), 10)
    with pytest.raises(ConnectionRefusedError):
        await asyncio.wait_for(asyncio.open_connection("127.0.0.1", server.port), 10)
    status, _, _ = await asyncio.wait_for(read_response(reader), 10)
    assert status == 200
    await asyncio.wait_for(shutdown, 30)


@pytest.mark.asyncio
async def test_idle_keepalive_connections_are_closed_immediately(server, open_client):
    reader, writer = await open_client()
    writer.write(b"GET /work/0 HTTP/1.1\r\nHost: x\r\n\r\n")
    status, headers, _ = await asyncio.wait_for(read_response(reader), 10)
    assert status == 200 and "connection" not in headers
    await asyncio.sleep(0.5)  # connection sits idle in keep-alive
    await asyncio.wait_for(server.shutdown(grace=30), 10)
    assert await asyncio.wait_for(reader.read(), 10) == b""
    assert server.conns == set()


@pytest.mark.asyncio
async def test_grace_period_expiry_cancels_stuck_request(server, open_client):
    reader, writer = await open_client()
    writer.write(b"GET /work/30000 HTTP/1.1\r\nHost: x\r\n\r\n")
    await asyncio.wait_for(server.request_started.wait(), 10)
    started = time.monotonic()
    await asyncio.wait_for(server.shutdown(grace=0.5), 10)
    elapsed = time.monotonic() - started
    status, headers, body = await asyncio.wait_for(read_response(reader), 10)
    assert (status, body) == (503, b"shutting down")
    assert headers["connection"] == "close"
    assert server.cancelled_requests == 1
    assert 0.5 - 0.01 <= elapsed < 10


@pytest.mark.asyncio
async def test_streaming_response_finishes_during_shutdown(server, open_client):
    reader, writer = await open_client()
    writer.write(b"GET /stream/6 HTTP/1.1\r\nHost: x\r\n\r\n")
    await asyncio.wait_for(server.request_started.wait(), 10)
    shutdown = asyncio.create_task(server.shutdown(grace=30))
    status, _, body = await asyncio.wait_for(read_response(reader), 10)
    await asyncio.wait_for(shutdown, 30)
    assert status == 200
    assert body == b"".join(f"part{n};".encode() for n in range(6))
    assert server.completed_requests == 1
