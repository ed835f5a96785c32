"""Two-lock deadlock: the cache sync takes cache then db, the reload takes db then cache.

Each holds its first lock across an await; when their critical sections overlap, each waits for
the lock the other holds, forever.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "deadlock", "resource": "Lock@"}


class Repository:
    def __init__(self) -> None:
        self.cache_lock = asyncio.Lock()
        self.db_lock = asyncio.Lock()
        self.cache = {"rows": 1}
        self.db = {"rows": 1}

    async def flush_cache(self) -> None:
        await asyncio.sleep(random.uniform(0, 0.012))
        async with self.cache_lock:
            snapshot = dict(self.cache)
            await asyncio.sleep(0.0005)  # serialise the snapshot
            async with self.db_lock:
                self.db.update(snapshot)

    async def reload_cache(self) -> None:
        await asyncio.sleep(random.uniform(0, 0.012))
        async with self.db_lock:
            rows = dict(self.db)
            await asyncio.sleep(0.0005)  # the query runs
            async with self.cache_lock:
                self.cache.update(rows)


@pytest.mark.asyncio
async def test_flush_and_reload_finish() -> None:
    repo = Repository()
    await asyncio.gather(repo.flush_cache(), repo.reload_cache())
    assert repo.cache == repo.db
