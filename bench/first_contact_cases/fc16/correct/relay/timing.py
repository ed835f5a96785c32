"""Small clocks: a monotonic stopwatch, a deadline and a loop lag probe."""
from __future__ import annotations

import asyncio
import time
from typing import Callable, List, Optional


class Stopwatch:
    """Measures elapsed time with both ``time.monotonic`` and ``loop.time``."""

    def __init__(self, loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
        self._loop = loop
        self.start_mono = time.monotonic()
        self.start_loop = loop.time() if loop is not None else None

    def elapsed(self) -> float:
        return time.monotonic() - self.start_mono

    def loop_elapsed(self) -> float:
        if self._loop is None:
            raise RuntimeError("stopwatch has no loop")
        return self._loop.time() - self.start_loop


class Deadline:
    """An absolute deadline on an injectable monotonic clock."""

    def __init__(self, timeout: Optional[float],
                 clock: Callable[[], float] = time.monotonic) -> None:
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be >= 0")
        self._clock = clock
        self._at = None if timeout is None else clock() + timeout

    def remaining(self) -> Optional[float]:
        if self._at is None:
            return None
        return max(0.0, self._at - self._clock())

    def expired(self) -> bool:
        return self._at is not None and self._clock() >= self._at


class LagProbe:
    """Records how late ``asyncio.sleep(interval)`` wakes up, per sample."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.samples: List[float] = []
        self._task: Optional[asyncio.Task] = None

    async def _run(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(self.interval)
            self.samples.append(max(0.0, time.monotonic() - before - self.interval))

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    @property
    def max_lag(self) -> float:
        return max(self.samples, default=0.0)
