"""A `@cached` decorator over an async in-memory cache that coalesces concurrent misses.

Paraphrased from aio-libs/aiocache (see README.md): concurrent callers for one key await the one
in-flight computation (single flight), as the fix proposed in the issue does.
"""

import asyncio
import functools
import random


class SimpleMemoryCache:
    def __init__(self) -> None:
        self._store: dict = {}

    async def get(self, key):
        await asyncio.sleep(random.uniform(0, 0.0003))  # the cache backend's latency
        return self._store.get(key)

    async def set(self, key, value) -> None:
        await asyncio.sleep(random.uniform(0, 0.0003))
        self._store[key] = value


class cached:
    """Caches a coroutine function's result per arguments."""

    def __init__(self, cache: SimpleMemoryCache) -> None:
        self.cache = cache
        self._in_flight: dict = {}

    def __call__(self, f):
        @functools.wraps(f)
        async def wrapper(*args):
            return await self.decorator(f, *args)

        return wrapper

    def get_cache_key(self, f, args) -> str:
        return f"{f.__module__}:{f.__qualname__}:{args!r}"

    async def get_from_cache(self, key):
        return await self.cache.get(key)

    async def set_in_cache(self, key, value) -> None:
        await self.cache.set(key, value)

    async def _get_or_compute(self, key, f, args):
        value = await self.get_from_cache(key)
        if value is not None:
            return value
        result = await f(*args)
        await self.set_in_cache(key, result)
        return result

    async def decorator(self, f, *args):
        # Concurrent callers for one key share the one in-flight lookup-and-compute; the entry is
        # dropped when it finishes, by which time the cache holds its result.
        key = self.get_cache_key(f, args)
        task = self._in_flight.get(key)
        if task is None:
            task = asyncio.ensure_future(self._get_or_compute(key, f, args))
            self._in_flight[key] = task
            task.add_done_callback(lambda _t: self._in_flight.pop(key, None))
        return await task
