"""@cached stores a stale value after a concurrent invalidation.

Report: https://github.com/aio-libs/aiocache/issues/95 ("Race condition in
`@cached`"; tracked further in aio-libs/aiocache#187).

Race: the decorator does ``v = await cache.get(k)``; on a miss it awaits the
wrapped function (which reads the source of truth) and then
``await cache.set(k, result)``.  If a writer updates the source and
invalidates the key *while* the reader is between its read of the source and
its ``cache.set``, the reader writes the old value back after the
invalidation.  The writer's update is lost from the cache and every later
reader is served the stale value until the TTL expires.
Shared state: the cache entry ``cache._data["price:sku1"]``; the awaits are
the backend latency inside ``load_price`` and ``await cache.set``.

Under plain pytest the reader finishes (5 ms) long before the writer runs
(20 ms), so the test passes.
"""
import asyncio

import pytest

EXPECTED = {"cause": "lost_update", "resource": "cache._data"}


class MemoryCache:
    def __init__(self):
        self._data = {}

    async def get(self, key):
        await asyncio.sleep(0)
        return self._data.get(key)

    async def set(self, key, value):
        await asyncio.sleep(0)
        self._data[key] = value

    async def delete(self, key):
        await asyncio.sleep(0)
        self._data.pop(key, None)


def cached(cache, key_fn):
    def deco(fn):
        async def wrapper(*args):
            key = key_fn(*args)
            value = await cache.get(key)
            if value is not None:
                return value
            result = await fn(*args)
            await cache.set(key, result)  # BUG: unconditional, may be stale now
            return result
        return wrapper
    return deco


DB = {}
CACHE = MemoryCache()


@cached(CACHE, key_fn=lambda sku: f"price:{sku}")
async def load_price(sku):
    value = DB[sku]
    await asyncio.sleep(0.005)  # database round trip
    return value


async def update_price(sku, value):
    DB[sku] = value
    await CACHE.delete(f"price:{sku}")


@pytest.mark.asyncio
async def test_forced_cache_reflects_latest_write():
    DB.clear()
    CACHE._data.clear()
    DB["sku1"] = 10

    async def writer():
        await asyncio.sleep(0.002)
        await update_price("sku1", 12)

    async def late_reader():
        await asyncio.sleep(0.04)
        return await load_price("sku1")

    first, _, later = await asyncio.gather(load_price("sku1"), writer(), late_reader())
    assert first == 10
    assert later == 12, f"stale price served after update: {later}"
    assert CACHE._data["price:sku1"] == DB["sku1"]
