"""An HTTP keep-alive connection pool with an idle expiry, a size limit and a reaper.

This resembles the pool tests of httpcore and aiohttp's TCPConnector: sequential
requests reuse one socket across sleeps, an expired idle connection is
replaced, the pool is capped at ``max_connections``, and a background reaper
closes idle sockets.  The server has its own idle timeout.  When the client
reuses a connection that the server has just closed, it retries once on a fresh
connection, as httpx/urllib3 do for idempotent requests.  So the outcome
does not depend on which side's timer runs first.
"""

import asyncio
import collections
import itertools
import time

import pytest
import pytest_asyncio


class CountingHTTPServer:
    def __init__(self, idle_timeout=30.0):
        self.idle_timeout = idle_timeout
        self.accepted = 0
        self.active = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._ids = itertools.count(1)
        self._handlers = set()
        self._writers = set()

    async def start(self):
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self):
        self._server.close()
        await self._server.wait_closed()
        for w in list(self._writers):
            w.close()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    async def _handle(self, reader, writer):
        conn_id = next(self._ids)
        self._handlers.add(asyncio.current_task())
        self._writers.add(writer)
        self.accepted += 1
        self.active += 1
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.idle_timeout)
                except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    break
                path = head.split(b" ", 2)[1].decode()
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    if path.startswith("/sleep/"):
                        await asyncio.sleep(int(path.rsplit("/", 1)[1]) / 1000)
                finally:
                    self.in_flight -= 1
                body = f"conn={conn_id} path={path}".encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        finally:
            self.active -= 1
            self._writers.discard(writer)
            writer.close()
            self._handlers.discard(asyncio.current_task())


class RemoteDisconnected(ConnectionError):
    """The server closed the connection before sending any response byte."""


class PooledConnection:
    def __init__(self, reader, writer, now):
        self.reader, self.writer = reader, writer
        self.last_used = now
        self.requests = 0

    def is_dropped(self):
        return self.reader.at_eof() or self.writer.is_closing()

    async def send(self, path):
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: pool\r\n\r\n".encode())
        await self.writer.drain()
        status_line = await self.reader.readline()
        if not status_line:
            raise RemoteDisconnected(path)
        head = status_line + await self.reader.readuntil(b"\r\n\r\n")
        length = int(head.split(b"Content-Length: ", 1)[1].split(b"\r\n", 1)[0])
        self.requests += 1
        return (await self.reader.readexactly(length)).decode()

    def close(self):
        self.writer.close()


class ConnectionPool:
    def __init__(self, port, max_connections=4, keepalive_expiry=30.0, reap_interval=None):
        self.port = port
        self.keepalive_expiry = keepalive_expiry
        self._idle = collections.deque()
        self._slots = asyncio.Semaphore(max_connections)
        self._closed = False
        self.opened = 0
        self.expired = 0
        self.retries = 0
        self._reaper = None
        if reap_interval is not None:
            self._reaper = asyncio.create_task(self._reap_forever(reap_interval))

    def _now(self):
        return asyncio.get_running_loop().time()

    async def _reap_forever(self, interval):
        while True:
            await asyncio.sleep(interval)
            now = self._now()
            keep = collections.deque()
            for conn in self._idle:
                if now - conn.last_used > self.keepalive_expiry or conn.is_dropped():
                    conn.close()
                    self.expired += 1
                else:
                    keep.append(conn)
            self._idle = keep

    def _take_idle(self):
        now = self._now()
        while self._idle:
            conn = self._idle.pop()
            if conn.is_dropped() or now - conn.last_used > self.keepalive_expiry:
                conn.close()
                self.expired += 1
                continue
            return conn
        return None

    async def _open(self):
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.opened += 1
        return PooledConnection(reader, writer, self._now())

    async def get(self, path):
        if self._closed:
            raise RuntimeError("pool is closed")
        async with self._slots:
            conn = self._take_idle()
            reused = conn is not None
            if conn is None:
                conn = await self._open()
            try:
                try:
                    body = await conn.send(path)
                except ConnectionError:
                    # RemoteDisconnected (EOF) or a reset: the server dropped the socket.
                    if not reused:
                        raise
                    # Stale keep-alive connection: retry once on a fresh socket.
                    conn.close()
                    self.retries += 1
                    conn = await self._open()
                    body = await conn.send(path)
            except BaseException:
                conn.close()
                raise
            conn.last_used = self._now()
            if self._closed:
                conn.close()
            else:
                self._idle.append(conn)
            return body

    @property
    def idle_count(self):
        return len(self._idle)

    async def aclose(self):
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            await asyncio.gather(self._reaper, return_exceptions=True)
        while self._idle:
            conn = self._idle.pop()
            conn.close()
            await conn.writer.wait_closed()


async def wait_until(predicate, interval=0.02):
    while not predicate():
        await asyncio.sleep(interval)


@pytest_asyncio.fixture
async def server():
    srv = await CountingHTTPServer().start()
    yield srv
    await srv.close()


@pytest_asyncio.fixture
async def pools():
    created = []

    def make(port, **kwargs):
        pool = ConnectionPool(port, **kwargs)
        created.append(pool)
        return pool

    yield make
    for pool in created:
        await pool.aclose()


@pytest.mark.asyncio
async def test_sequential_requests_reuse_one_connection(server, pools):
    pool = pools(server.port)
    bodies = []
    for n in range(3):
        bodies.append(await asyncio.wait_for(pool.get(f"/item/{n}"), 10))
        await asyncio.sleep(0.5)
    assert {b.split()[0] for b in bodies} == {"conn=1"}
    assert pool.opened == 1
    assert server.accepted == 1


@pytest.mark.asyncio
async def test_connection_past_client_expiry_is_replaced(server, pools):
    pool = pools(server.port, keepalive_expiry=0.5)
    first = await asyncio.wait_for(pool.get("/a"), 10)
    started = time.monotonic()
    await asyncio.sleep(0.8)
    assert time.monotonic() - started >= 0.8 - 0.01
    second = await asyncio.wait_for(pool.get("/b"), 10)
    assert first.startswith("conn=1 ")
    assert second.startswith("conn=2 ")
    assert (pool.opened, pool.expired) == (2, 1)
    await asyncio.wait_for(wait_until(lambda: server.active == 1), 10)


@pytest.mark.asyncio
async def test_connection_closed_by_server_idle_timeout_is_not_fatal(pools):
    srv = await CountingHTTPServer(idle_timeout=0.5).start()
    try:
        pool = pools(srv.port)
        assert (await asyncio.wait_for(pool.get("/first"), 10)).startswith("conn=1 ")
        await asyncio.sleep(1.0)
        second = await asyncio.wait_for(pool.get("/second"), 10)
        assert second.startswith("conn=2 ")
        # Either the pool saw the EOF before reuse (expired) or it retried.
        assert pool.opened == 2
        assert pool.expired + pool.retries == 1
    finally:
        await pool.aclose()
        await srv.close()


@pytest.mark.asyncio
async def test_max_connections_caps_concurrency(server, pools):
    pool = pools(server.port, max_connections=2)
    started = time.monotonic()
    bodies = await asyncio.wait_for(
        asyncio.gather(*(pool.get("/sleep/200") for _ in range(6))), 20
    )
    elapsed = time.monotonic() - started
    assert len(bodies) == 6
    assert 1 <= server.max_in_flight <= 2
    assert pool.opened == 2
    assert {b.split()[0] for b in bodies} == {"conn=1", "conn=2"}
    # Two sockets, six 200 ms requests: at least three rounds.
    assert 0.6 - 0.01 <= elapsed < 12


@pytest.mark.asyncio
async def test_idle_reaper_closes_expired_connections(server, pools):
    pool = pools(server.port, keepalive_expiry=0.5, reap_interval=0.1)
    started = time.monotonic()
    await asyncio.wait_for(asyncio.gather(*(pool.get("/sleep/50") for _ in range(3))), 10)
    assert pool.opened == 3
    await asyncio.wait_for(wait_until(lambda: pool.idle_count == 0), 10)
    # A connection is reaped only once it has been idle for more than 0.5 s,
    # and it became idle after `started`.
    assert time.monotonic() - started >= 0.5 - 0.01
    assert pool.expired == 3
    await asyncio.wait_for(wait_until(lambda: server.active == 0), 10)


@pytest.mark.asyncio
async def test_closed_pool_releases_sockets_and_refuses_requests(server, pools):
    pool = pools(server.port)
    await asyncio.wait_for(asyncio.gather(*(pool.get("/sleep/20") for _ in range(3))), 10)
    assert server.active == 3
    await pool.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await pool.get("/late")
    await asyncio.wait_for(wait_until(lambda: server.active == 0), 10)
