"""A token bucket usable from threads and from coroutines.

State lives behind a ``threading.Lock`` and is only touched in short,
non-blocking critical sections, so holding it on the loop thread is fine.
The clock is injectable: tests drive a manual clock, production uses
``time.monotonic``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Callable, Optional


class TokenBucket:
    """``rate`` tokens per second, at most ``capacity`` stored."""

    def __init__(self, rate: float, capacity: float, *,
                 clock: Callable[[], float] = time.monotonic,
                 initial: Optional[float] = None) -> None:
        if rate <= 0 or capacity <= 0:
            raise ValueError("rate and capacity must be positive")
        self.rate = float(rate)
        self.capacity = float(capacity)
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = self.capacity if initial is None else float(initial)
        self._stamp = clock()
        self.granted = 0

    def _refill_locked(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._stamp)
        self._stamp = now
        self._tokens = min(self.capacity, self._tokens + elapsed * self.rate)

    def available(self) -> float:
        with self._lock:
            self._refill_locked()
            return self._tokens

    def try_acquire(self, n: float = 1) -> bool:
        """Take *n* tokens if present; never blocks.  Thread-safe."""
        if n > self.capacity:
            raise ValueError("request larger than capacity")
        with self._lock:
            self._refill_locked()
            if self._tokens >= n:
                self._tokens -= n
                self.granted += 1
                return True
            return False

    def _delay_for(self, n: float) -> float:
        with self._lock:
            self._refill_locked()
            missing = n - self._tokens
        return max(0.0, missing / self.rate)

    def acquire_blocking(self, n: float = 1, timeout: Optional[float] = None) -> bool:
        """Thread side: sleep until *n* tokens are taken or *timeout* passes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.try_acquire(n):
            delay = self._delay_for(n)
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                delay = min(delay, remaining)
            time.sleep(max(delay, 0.001))
        return True

    async def acquire(self, n: float = 1) -> None:
        """Loop side: wait until *n* tokens are taken.

        Check and take happen in one locked step (:meth:`try_acquire`); the
        sleep only estimates when to try again, so competing threads and
        tasks can never overdraw the bucket.
        """
        while not self.try_acquire(n):
            await asyncio.sleep(max(self._delay_for(n), 0.001))
