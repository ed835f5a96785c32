"""An async in-memory moving-window rate limiter whose expiry pass computes its cutoff unlocked.

Paraphrased from alisaifee/limits (see README.md): the background expiry pass computes how many
entries are still inside the window, then takes the key's lock and truncates the list to that many;
a hit recorded in between shifts the list, so the truncation drops a live entry and the limiter
admits more hits than its limit.
"""

import asyncio
import bisect
import contextlib
import random
import time
from collections import defaultdict


class Entry:
    def __init__(self, expiry: float) -> None:
        self.atime = time.time()
        self.expiry = self.atime + expiry


class MemoryStorage:
    def __init__(self) -> None:
        self.events: dict = {}  # key -> entries, newest first
        self.locks: dict = defaultdict(asyncio.Lock)
        self.timer = None

    async def _live_count(self, key: str, now: float) -> int:
        """How many of the key's entries are still inside their window (computed off the loop)."""
        events = self.events.get(key, [])
        count = bisect.bisect_left(events, -now, key=lambda entry: -entry.expiry)
        await asyncio.sleep(random.uniform(0, 0.0005))  # the worker thread hands the result back
        return count

    async def _expire_events(self) -> None:
        while True:
            now = time.time()
            for key in list(self.events):
                cutoff = await self._live_count(key, now)
                async with self.locks[key]:
                    if self.events.get(key):
                        self.events[key] = self.events[key][:cutoff]
            await asyncio.sleep(0.0005)

    def _schedule_expiry(self) -> None:
        if self.timer is None or self.timer.done():
            self.timer = asyncio.ensure_future(self._expire_events())

    async def acquire_entry(self, key: str, limit: int, expiry: float) -> bool:
        self._schedule_expiry()
        async with self.locks[key]:
            entries = self.events.setdefault(key, [])
            timestamp = time.time()
            entry = entries[limit - 1] if len(entries) >= limit else None
            if entry is not None and entry.atime >= timestamp - expiry:
                return False
            entries.insert(0, Entry(expiry))
            return True

    async def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.timer


class MovingWindowRateLimiter:
    def __init__(self, storage: MemoryStorage) -> None:
        self.storage = storage

    async def hit(self, limit: int, per_seconds: float, key: str) -> bool:
        return await self.storage.acquire_entry(key, limit, per_seconds)
