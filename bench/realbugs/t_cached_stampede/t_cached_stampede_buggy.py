"""A `@cached` decorator over an async in-memory cache that does not coalesce concurrent misses.

Paraphrased from aio-libs/aiocache (see README.md): the first callers all miss the cache and each
runs the wrapped coroutine; the cache then holds whichever result was written last.
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

    async def decorator(self, f, *args):
        key = self.get_cache_key(f, args)
        value = await self.get_from_cache(key)
        if value is not None:
            return value
        result = await f(*args)
        await self.set_in_cache(key, result)
        return result
