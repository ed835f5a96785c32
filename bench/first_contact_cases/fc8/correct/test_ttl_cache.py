"""TTL cache tests in the style of ``aiocache``'s SimpleMemoryCache and the
single-flight ("request coalescing") memoizers found in web frameworks.

Two expiry strategies are covered: lazy expiry (the entry stores an absolute
deadline read from ``time.monotonic()`` and ``get`` compares against the clock)
and eager eviction with ``loop.call_later``.  A single-flight ``get_or_load``
makes concurrent misses share one in-flight load via a Future registered
synchronously before the first ``await``.
"""

import asyncio
import time

import pytest


class TTLCache:
    def __init__(self, default_ttl: float, eager: bool = False) -> None:
        self.default_ttl = default_ttl
        self.eager = eager
        self._data: dict[str, tuple[object, float]] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._inflight: dict[str, asyncio.Future] = {}
        self.loads = 0

    def set(self, key, value, ttl=None):
        ttl = self.default_ttl if ttl is None else ttl
        self._data[key] = (value, time.monotonic() + ttl)
        if self.eager:
            old = self._timers.pop(key, None)
            if old is not None:
                old.cancel()
            loop = asyncio.get_running_loop()
            self._timers[key] = loop.call_later(ttl, self._evict, key)

    def _evict(self, key):
        self._timers.pop(key, None)
        self._data.pop(key, None)

    def get(self, key, default=None):
        item = self._data.get(key)
        if item is None:
            return default
        value, deadline = item
        if time.monotonic() >= deadline:
            self._data.pop(key, None)
            return default
        return value

    def raw_contains(self, key) -> bool:
        return key in self._data

    async def get_or_load(self, key, loader, ttl=None):
        hit = self.get(key, _MISSING)
        if hit is not _MISSING:
            return hit
        fut = self._inflight.get(key)
        if fut is not None:
            return await asyncio.shield(fut)
        fut = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut  # registered before the first await
        try:
            self.loads += 1
            value = await loader(key)
        except asyncio.CancelledError:
            fut.cancel()
            raise
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved: waiters may not exist
            raise
        else:
            self.set(key, value, ttl)
            fut.set_result(value)
            return value
        finally:
            del self._inflight[key]

    def close(self):
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()


_MISSING = object()


@pytest.mark.asyncio
async def test_lazy_entry_expires_after_ttl():
    cache = TTLCache(default_ttl=0.1)
    start = time.monotonic()
    cache.set("user:1", {"name": "ada"})
    assert cache.get("user:1") == {"name": "ada"}
    while cache.get("user:1") is not None:
        await asyncio.sleep(0.01)
        assert time.monotonic() - start < 10.0, "entry never expired"
    assert time.monotonic() - start >= 0.1
    assert not cache.raw_contains("user:1")


@pytest.mark.asyncio
async def test_eager_eviction_with_call_later():
    cache = TTLCache(default_ttl=0.05, eager=True)
    cache.set("k", "v")
    assert cache.raw_contains("k")
    await asyncio.sleep(0.05 + 0.15)
    # The call_later timer (due at 0.05 s) has certainly fired by now.
    assert not cache.raw_contains("k")
    assert cache.get("k") is None
    cache.close()


@pytest.mark.asyncio
async def test_overwrite_resets_eager_timer():
    cache = TTLCache(default_ttl=0.05, eager=True)
    cache.set("k", 1)
    cache.set("k", 2, ttl=30)  # long TTL replaces the short one
    await asyncio.sleep(0.2)
    assert cache.get("k") == 2
    cache.close()
    assert cache.get("k") == 2  # close only cancels timers


@pytest.mark.asyncio
async def test_single_flight_loader_runs_once_for_concurrent_misses():
    cache = TTLCache(default_ttl=60)
    started = asyncio.Event()
    release = asyncio.Event()

    async def loader(key):
        started.set()
        await release.wait()
        return key.upper()

    tasks = [asyncio.create_task(cache.get_or_load("abc", loader)) for _ in range(10)]
    await asyncio.wait_for(started.wait(), timeout=10)
    for _ in range(3):
        await asyncio.sleep(0)
    release.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)
    assert results == ["ABC"] * 10
    assert cache.loads == 1
    # Subsequent calls are served from the cache.
    assert await cache.get_or_load("abc", loader) == "ABC"
    assert cache.loads == 1


@pytest.mark.asyncio
async def test_reload_after_expiry_measured_on_loop_clock():
    loop = asyncio.get_running_loop()
    cache = TTLCache(default_ttl=0.08)
    loaded_at = []

    async def loader(key):
        loaded_at.append(loop.time())
        return len(loaded_at)

    assert await cache.get_or_load("cfg", loader) == 1
    assert await cache.get_or_load("cfg", loader) == 1
    await asyncio.sleep(0.3)
    assert await cache.get_or_load("cfg", loader) == 2
    assert loaded_at[1] - loaded_at[0] >= 0.08
