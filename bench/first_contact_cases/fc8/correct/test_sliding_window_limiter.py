"""Sliding-window-log rate limiter, as used by API gateways and bot frameworks
(e.g. "at most N messages per channel per T seconds").

The limiter keeps a deque of grant timestamps taken from ``time.monotonic()``
and sleeps until the oldest grant leaves the window.  An injectable clock is
also exercised with a fake clock through ``monkeypatch``.  All timing
assertions are lower bounds that the algorithm guarantees, plus very generous
upper bounds.
"""

import asyncio
import collections
import time

import pytest


class SlidingWindowLimiter:
    def __init__(self, limit: int, window: float, clock=time.monotonic) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._grants: collections.deque[float] = collections.deque()
        self._cond = asyncio.Condition()

    def _prune(self, now: float) -> None:
        while self._grants and now - self._grants[0] >= self.window:
            self._grants.popleft()

    def try_acquire(self) -> bool:
        now = self._clock()
        self._prune(now)
        if len(self._grants) < self.limit:
            self._grants.append(now)
            return True
        return False

    async def acquire(self) -> float:
        """Wait for a slot; return the timestamp of the grant."""
        async with self._cond:
            while True:
                now = self._clock()
                self._prune(now)
                if len(self._grants) < self.limit:
                    self._grants.append(now)
                    return now
                wait = self._grants[0] + self.window - now
                try:
                    await asyncio.wait_for(self._cond.wait(), timeout=max(wait, 0.0005))
                except asyncio.TimeoutError:
                    pass

    def in_window(self) -> int:
        self._prune(self._clock())
        return len(self._grants)


@pytest.mark.asyncio
async def test_limit_is_enforced_within_one_window():
    limiter = SlidingWindowLimiter(limit=3, window=0.25)
    start = time.monotonic()
    stamps = [await limiter.acquire() for _ in range(4)]
    elapsed = time.monotonic() - start
    # The 4th grant must wait for the 1st to leave the window.
    assert stamps[3] - stamps[0] >= 0.25
    assert elapsed >= 0.25 - 1e-6
    assert elapsed < 10.0


@pytest.mark.asyncio
async def test_no_window_ever_contains_more_than_limit_grants():
    limiter = SlidingWindowLimiter(limit=4, window=0.1)
    grants: list[float] = []

    async def worker() -> None:
        for _ in range(3):
            grants.append(await limiter.acquire())

    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(4))), timeout=30)
    grants.sort()
    assert len(grants) == 12
    # Any limit+1 consecutive grants span at least one full window.
    for i in range(len(grants) - 4):
        assert grants[i + 4] - grants[i] >= 0.1


@pytest.mark.asyncio
async def test_try_acquire_does_not_block(monkeypatch):
    fake_now = [1000.0]
    limiter = SlidingWindowLimiter(limit=2, window=8.0)
    # Swap the instance's clock only; the event loop keeps the real monotonic clock.
    monkeypatch.setattr(limiter, "_clock", lambda: fake_now[0])
    assert limiter.try_acquire()
    fake_now[0] += 2.0
    assert limiter.try_acquire()
    assert not limiter.try_acquire()
    fake_now[0] += 5.5  # t=1007.5: both grants still inside the 8 s window
    assert not limiter.try_acquire()
    fake_now[0] += 0.5  # t=1008.0: the first grant leaves the window
    assert limiter.try_acquire()
    assert limiter.in_window() == 2
    fake_now[0] += 2.0  # t=1010.0: the grant from t=1002 leaves as well
    assert limiter.in_window() == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("limit", [1, 5], ids=lambda n: f"limit={n}")
async def test_burst_up_to_limit_is_immediate(limit):
    limiter = SlidingWindowLimiter(limit=limit, window=60.0)
    start = time.monotonic()
    for _ in range(limit):
        await asyncio.wait_for(limiter.acquire(), timeout=20)
    assert time.monotonic() - start < 5.0
    assert limiter.in_window() == limit
    # The next one would block for a minute: prove it with a short timeout.
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(limiter.acquire(), timeout=0.05)
