"""Timeouts around real network I/O: read timeouts, shared deadlines, slow-client protection.

This is modelled on the timeout tests of HTTP clients and servers (httpx's
``Timeout``, aiohttp's ``ClientTimeout``, gunicorn/uvicorn header-read timeouts,
and gRPC deadlines).  Generous ``wait_for`` limits (5-30 s) wrap work that takes
milliseconds.  Each expected timeout is checked only with the lower bound that
asyncio guarantees: a timer never fires before its deadline.
"""

import asyncio
import time

import pytest
import pytest_asyncio


class DelayServer:
    """Line protocol: 'DELAY <ms> <text>' replies '<text>' after <ms>; 'SILENT' never replies.

    A request line must be completed within ``header_timeout`` seconds;
    otherwise the server answers ``408`` and hangs up.
    """

    def __init__(self, header_timeout=30.0):
        self.header_timeout = header_timeout
        self.timeouts = 0
        self._tasks = set()
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
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.add(writer)
        try:
            while True:
                try:
                    async with asyncio.timeout(self.header_timeout):
                        line = await reader.readline()
                except TimeoutError:
                    self.timeouts += 1
                    writer.write(b"408 request timeout\n")
                    return
                if not line:
                    return
                parts = line.decode().split(" ", 2)
                if parts[0] == "DELAY":
                    await asyncio.sleep(int(parts[1]) / 1000)
                    writer.write(parts[2].encode())
                    await writer.drain()
                elif parts[0].strip() == "SILENT":
                    continue
        except ConnectionError:
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(asyncio.current_task())


@pytest_asyncio.fixture
async def server():
    srv = await DelayServer().start()
    yield srv
    await srv.close()


@pytest_asyncio.fixture
async def conn(server):
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    yield reader, writer
    writer.close()
    try:
        await writer.wait_closed()
    except ConnectionError:
        pass


async def call(reader, writer, ms, text):
    writer.write(f"DELAY {ms} {text}\n".encode())
    await writer.drain()
    return (await reader.readline()).decode().rstrip("\n")


@pytest.mark.asyncio
async def test_generous_wait_for_around_a_quick_round_trip(conn):
    started = time.perf_counter()
    assert await asyncio.wait_for(call(*conn, 0, "quick"), timeout=5) == "quick"
    assert await asyncio.wait_for(call(*conn, 50, "fifty"), timeout=30) == "fifty"
    assert time.perf_counter() - started >= 0.05 - 0.005


@pytest.mark.asyncio
async def test_read_timeout_leaves_connection_usable(conn):
    reader, writer = conn
    writer.write(b"SILENT\n")
    await writer.drain()
    started = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(reader.readline(), 0.3)
    assert time.monotonic() - started >= 0.3 - 0.01
    # The cancelled readline consumed nothing; the stream still works.
    assert await asyncio.wait_for(call(reader, writer, 0, "after"), 10) == "after"


@pytest.mark.asyncio
async def test_shared_deadline_across_sequential_requests(conn):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    remaining = []
    async with asyncio.timeout_at(deadline):
        for n in range(3):
            assert await call(*conn, 100, f"step{n}") == f"step{n}"
            remaining.append(deadline - loop.time())
    # Each step waits 100 ms on the server, so the budget shrinks by at least that.
    for earlier, later in zip(remaining, remaining[1:]):
        assert earlier - later >= 0.1 - 0.01
    assert 30 - remaining[-1] >= 0.3 - 0.01


@pytest.mark.asyncio
async def test_exhausted_deadline_cancels_the_remaining_requests(conn):
    completed = []
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.4):
            for n in range(3):
                completed.append(await call(*conn, 300, f"r{n}"))
    elapsed = time.monotonic() - started
    # Three 300 ms steps cannot fit in 400 ms; at most the first one finishes.
    assert len(completed) <= 1
    assert 0.4 - 0.01 <= elapsed < 8


@pytest.mark.asyncio
async def test_timers_far_apart_fire_in_deadline_order(conn):
    reader, writer = conn
    loop = asyncio.get_running_loop()
    order = []
    late = loop.call_later(0.7, order.append, "late")
    early = loop.call_later(0.1, order.append, "early")
    try:
        assert await asyncio.wait_for(call(reader, writer, 800, "done"), 10) == "done"
    finally:
        late.cancel()
        early.cancel()
    assert order == ["early", "late"]


@pytest.mark.asyncio
async def test_slow_client_gets_408_after_header_timeout():
    srv = await DelayServer(header_timeout=0.5).start()
    try:
        # The server's header timer starts when it accepts, which is after this point.
        started = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
        try:
            writer.write(b"DELAY 10 never-fin")  # no newline: the request line stalls
            await writer.drain()
            reply = await asyncio.wait_for(reader.read(), 10)
            elapsed = time.monotonic() - started
        finally:
            writer.close()
            await writer.wait_closed()
        assert reply == b"408 request timeout\n"
        assert srv.timeouts == 1
        assert 0.5 - 0.01 <= elapsed < 10
    finally:
        await srv.close()
