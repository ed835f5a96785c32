"""Cache stampede: concurrent misses on the same key each go to the backend.

The cache checks for the key, awaits the backend, and only then stores the value; every request
that arrives while the first load is in flight misses too and loads the value again.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "lost_update", "resource": "Cache#0.entries"}


class Cache:
    def __init__(self) -> None:
        self.entries: dict = {}
        self.loads = 0

    async def _load(self, key: str) -> str:
        self.loads += 1
        await asyncio.sleep(0.001)  # the expensive backend query
        return key.upper()

    async def get(self, key: str) -> str:
        if key not in self.entries:
            value = await self._load(key)
            self.entries[key] = value
        return self.entries[key]


async def client(cache: Cache) -> str:
    await asyncio.sleep(random.uniform(0, 0.012))
    return await cache.get("profile")


@pytest.mark.asyncio
async def test_backend_loaded_once() -> None:
    cache = Cache()
    values = await asyncio.gather(client(cache), client(cache), client(cache))
    assert values == ["PROFILE"] * 3
    assert cache.loads == 1, f"the backend was queried {cache.loads} times"
