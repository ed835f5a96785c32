"""A read-through TTL cache in front of an upstream reached over TCP, on anyio (asyncio backend).

This imitates the tests of caching layers such as aiocache, cashews and
hishel's async transport.  Entries expire by ``anyio.current_time()``.
Concurrent misses for one key are coalesced into a single upstream request.
Invalidations arrive on a memory object stream, and an expired entry is served
stale when the upstream fails.  Freshness is only expected when the TTL is at
least 20x the sleep.  Expiry is only expected after a sleep longer than the TTL.
"""

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Upstream:
    """Line protocol: 'GET key' -> 'OK key=vN' (N counts fetches) or 'FAIL'."""

    def __init__(self, delay=0.0):
        self.delay = delay
        self.fetches = {}
        self.failing = False

    async def handle(self, stream):
        buffered = BufferedByteReceiveStream(stream)
        async with stream:
            while True:
                try:
                    line = await buffered.receive_until(b"\n", 4096)
                except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                    return
                key = line.decode().split(" ", 1)[1]
                if self.delay:
                    await anyio.sleep(self.delay)
                if self.failing:
                    await stream.send(b"FAIL\n")
                    continue
                self.fetches[key] = self.fetches.get(key, 0) + 1
                await stream.send(f"OK {key}=v{self.fetches[key]}\n".encode())


class UpstreamError(Exception):
    pass


class ReadThroughCache:
    def __init__(self, port, ttl, stale_ttl=0.0):
        self.port = port
        self.ttl = ttl
        self.stale_ttl = stale_ttl
        self.entries = {}  # key -> (value, stored_at)
        self.inflight = {}  # key -> anyio.Event
        self.stale_served = 0

    async def _fetch(self, key):
        stream = await anyio.connect_tcp("127.0.0.1", self.port)
        async with stream:
            await stream.send(f"GET {key}\n".encode())
            reply = await BufferedByteReceiveStream(stream).receive_until(b"\n", 4096)
        if reply == b"FAIL":
            raise UpstreamError(key)
        return reply.decode().split("=", 1)[1]

    async def get(self, key):
        now = anyio.current_time()
        entry = self.entries.get(key)
        if entry is not None and now - entry[1] < self.ttl:
            return entry[0]
        pending = self.inflight.get(key)
        if pending is not None:
            await pending.wait()
            return await self.get(key)
        done = self.inflight[key] = anyio.Event()
        try:
            value = await self._fetch(key)
            self.entries[key] = (value, anyio.current_time())
            return value
        except UpstreamError:
            if entry is not None and now - entry[1] < self.ttl + self.stale_ttl:
                self.stale_served += 1
                return entry[0]
            raise
        finally:
            del self.inflight[key]
            done.set()

    def invalidate(self, key):
        self.entries.pop(key, None)


@pytest.fixture
async def upstream():
    up = Upstream()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    up.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, up.handle)
        yield up
        tg.cancel_scope.cancel()
    await listener.aclose()


async def test_entry_stays_fresh_within_a_long_ttl(upstream):
    cache = ReadThroughCache(upstream.port, ttl=30)
    with anyio.fail_after(10):
        assert await cache.get("user:1") == "v1"
    await anyio.sleep(0.5)
    with anyio.fail_after(10):
        assert await cache.get("user:1") == "v1"
    assert upstream.fetches == {"user:1": 1}


async def test_entry_is_refetched_after_it_expires(upstream):
    cache = ReadThroughCache(upstream.port, ttl=0.5)
    with anyio.fail_after(10):
        assert await cache.get("user:2") == "v1"
    started = anyio.current_time()
    await anyio.sleep(0.7)
    assert anyio.current_time() - started >= 0.7 - 0.01
    with anyio.fail_after(10):
        assert await cache.get("user:2") == "v2"
    assert upstream.fetches == {"user:2": 2}


async def test_concurrent_misses_share_one_upstream_request(upstream):
    upstream.delay = 0.2
    cache = ReadThroughCache(upstream.port, ttl=30)
    results = []

    async def reader():
        results.append(await cache.get("hot"))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(reader)
    assert results == ["v1"] * 5
    assert upstream.fetches == {"hot": 1}


async def test_invalidations_from_a_stream_force_a_refetch(upstream):
    cache = ReadThroughCache(upstream.port, ttl=30)
    send, receive = anyio.create_memory_object_stream(max_buffer_size=10)
    applied = []

    async def invalidation_listener():
        async with receive:
            async for key in receive:
                cache.invalidate(key)
                applied.append(key)

    async with anyio.create_task_group() as tg:
        tg.start_soon(invalidation_listener)
        with anyio.fail_after(10):
            assert await cache.get("cfg") == "v1"
            async with send:
                await send.send("cfg")
                while applied != ["cfg"]:
                    await anyio.sleep(0.01)
            assert await cache.get("cfg") == "v2"
    assert upstream.fetches == {"cfg": 2}


async def test_stale_entry_served_when_upstream_fails(upstream):
    cache = ReadThroughCache(upstream.port, ttl=0.3, stale_ttl=60)
    with anyio.fail_after(10):
        assert await cache.get("feed") == "v1"
    await anyio.sleep(0.5)  # past the ttl, well inside the stale window
    upstream.failing = True
    with anyio.fail_after(10):
        assert await cache.get("feed") == "v1"
    assert cache.stale_served == 1
    cold = ReadThroughCache(upstream.port, ttl=0.3)
    with pytest.raises(UpstreamError):
        with anyio.fail_after(10):
            await cold.get("feed")
