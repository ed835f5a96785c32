"""Clock abstractions.

Every timed component takes a ``clock`` (anything with ``now()`` and ``async sleep(d)``).
The default is :class:`LoopClock`, which reads ``loop.time()`` of the running loop.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, delay: float) -> None: ...


class LoopClock:
    """The running loop's monotonic clock (``loop.time()``)."""

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(max(0.0, delay))

    async def sleep_until(self, when: float) -> None:
        loop = asyncio.get_running_loop()
        # a timer may fire up to the clock resolution early: loop until reached
        while True:
            delay = when - loop.time()
            if delay <= 0:
                return
            await asyncio.sleep(delay)


class MonotonicClock(LoopClock):
    """``time.monotonic()``; sleeps on the running loop."""

    def now(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that only moves when told to; sleeping waits for :meth:`advance`."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, asyncio.Future]] = []
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self._now

    async def sleep(self, delay: float) -> None:
        self.sleeps.append(delay)
        if delay <= 0:
            await asyncio.sleep(0)
            return
        fut = asyncio.get_running_loop().create_future()
        self._sleepers.append((self._now + delay, fut))
        try:
            await fut
        finally:
            self._sleepers = [(w, f) for (w, f) in self._sleepers if f is not fut]

    def advance(self, delta: float) -> int:
        """Move time forward; wake sleepers whose deadline passed. Returns how many woke."""
        self._now += delta
        woke = 0
        for when, fut in list(self._sleepers):
            if when <= self._now and not fut.done():
                fut.set_result(None)
                woke += 1
        return woke

    @property
    def sleeping(self) -> int:
        return sum(1 for _, f in self._sleepers if not f.done())


def utcnow() -> datetime:
    """Timezone-aware wall-clock time (UTC)."""
    return datetime.now(timezone.utc)
