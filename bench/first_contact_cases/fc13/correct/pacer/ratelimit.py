"""Rate limiters: token bucket, sliding window log, leaky bucket (metered queue).

All three are cancel-safe: a caller cancelled while waiting consumes nothing
(the leaky bucket gives its reserved slot back only if it was the last one).
"""

from __future__ import annotations

import asyncio
import collections
from typing import Optional

from . import stats
from .clock import Clock, LoopClock
from .errors import RateLimitExceeded


class _Limiter:
    def __init__(self, clock: Optional[Clock]) -> None:
        self._clock = clock or LoopClock()
        self._lock = asyncio.Lock()
        self.admitted = 0

    async def __aenter__(self):
        await self.acquire()
        return self

    async def __aexit__(self, *exc) -> None:
        return None

    def _admit(self, kind: str) -> None:
        self.admitted += 1
        stats.incr(f"ratelimit.{kind}.admitted")

    async def acquire(self, n: int = 1) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class TokenBucket(_Limiter):
    """``rate`` tokens per second, at most ``capacity`` stored. Starts full unless ``initial``."""

    def __init__(self, rate: float, capacity: float = 1, *, initial: Optional[float] = None,
                 clock: Optional[Clock] = None) -> None:
        if rate <= 0 or capacity <= 0:
            raise ValueError("rate and capacity must be positive")
        super().__init__(clock)
        self.rate = float(rate)
        self.capacity = float(capacity)
        self._tokens = self.capacity if initial is None else float(initial)
        self._last: Optional[float] = None

    def _refill(self) -> None:
        now = self._clock.now()
        if self._last is not None:
            self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
        self._last = now

    @property
    def tokens(self) -> float:
        self._refill()
        return self._tokens

    def try_acquire(self, n: float = 1) -> None:
        """Take ``n`` tokens now or raise :class:`RateLimitExceeded` (never jumps the queue)."""
        if n > self.capacity:
            raise ValueError("n exceeds capacity")
        self._refill()
        if self._lock.locked() or self._tokens < n:
            deficit = max(0.0, n - self._tokens)
            raise RateLimitExceeded(deficit / self.rate)
        self._tokens -= n
        self._admit("token")

    async def acquire(self, n: float = 1) -> None:
        if n > self.capacity:
            raise ValueError("n exceeds capacity")
        async with self._lock:  # FIFO among waiters
            while True:
                self._refill()
                if self._tokens >= n:
                    self._tokens -= n
                    self._admit("token")
                    return
                await self._clock.sleep((n - self._tokens) / self.rate)


class SlidingWindow(_Limiter):
    """At most ``limit`` admissions in any window of ``window`` seconds (log based)."""

    def __init__(self, limit: int, window: float, *, clock: Optional[Clock] = None) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("limit must be >= 1 and window > 0")
        super().__init__(clock)
        self.limit = limit
        self.window = float(window)
        self._log: collections.deque[float] = collections.deque()

    def _purge(self, now: float) -> None:
        while self._log and self._log[0] <= now - self.window:
            self._log.popleft()

    def in_window(self) -> int:
        self._purge(self._clock.now())
        return len(self._log)

    def try_acquire(self) -> None:
        now = self._clock.now()
        self._purge(now)
        if self._lock.locked() or len(self._log) >= self.limit:
            retry_after = (self._log[0] + self.window - now) if self._log else 0.0
            raise RateLimitExceeded(max(0.0, retry_after))
        self._log.append(now)
        self._admit("window")

    async def acquire(self) -> None:
        async with self._lock:
            while True:
                now = self._clock.now()
                self._purge(now)
                if len(self._log) < self.limit:
                    self._log.append(now)
                    self._admit("window")
                    return
                await self._clock.sleep(self._log[0] + self.window - now)

    @property
    def log(self) -> list[float]:
        return list(self._log)


class LeakyBucket(_Limiter):
    """Admissions leave at a steady ``rate`` per second; at most ``max_queue`` may wait."""

    def __init__(self, rate: float, *, max_queue: int = 1000, clock: Optional[Clock] = None) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        super().__init__(clock)
        self.interval = 1.0 / rate
        self.max_queue = max_queue
        self._next_slot: Optional[float] = None
        self._waiting = 0

    @property
    def waiting(self) -> int:
        return self._waiting

    def _reserve(self) -> float:
        now = self._clock.now()
        slot = now if self._next_slot is None else max(now, self._next_slot)
        self._next_slot = slot + self.interval
        return slot

    async def acquire(self) -> float:
        """Wait for this caller's slot; returns the slot time it was admitted at."""
        if self._waiting >= self.max_queue:
            raise RateLimitExceeded(self._waiting * self.interval)
        slot = self._reserve()
        self._waiting += 1
        try:
            while True:
                delay = slot - self._clock.now()
                if delay <= 0:
                    break
                await self._clock.sleep(delay)
        except BaseException:
            # give the slot back only if nobody reserved after us
            if self._next_slot == slot + self.interval:
                self._next_slot = slot
            raise
        finally:
            self._waiting -= 1
        self._admit("leaky")
        return slot
