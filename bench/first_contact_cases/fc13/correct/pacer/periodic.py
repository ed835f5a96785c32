"""Periodic task runner: fixed-rate (drift corrected against ``loop.time()``) or fixed-delay.

Ticks never overlap: the next tick starts only after the previous one returned. In fixed-rate
mode a tick that overran skips the missed slots (``skip_missed=True``) or runs the next slot
at once (``skip_missed=False``).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

from . import stats

log = logging.getLogger("pacer.periodic")


@dataclass
class Tick:
    index: int          # slot number (fixed-rate) or run number (fixed-delay)
    scheduled: float    # loop time the tick was due
    started: float
    ended: float = 0.0
    error: Optional[BaseException] = None


class PeriodicTask:
    def __init__(self, fn: Callable[[], Any], period: float, *, mode: str = "fixed_rate",
                 max_ticks: Optional[int] = None, skip_missed: bool = True,
                 initial_delay: float = 0.0, stop_on_error: bool = False,
                 name: str = "periodic") -> None:
        if mode not in ("fixed_rate", "fixed_delay"):
            raise ValueError(f"unknown mode {mode!r}")
        if period <= 0:
            raise ValueError("period must be positive")
        self._fn = fn
        self.period = period
        self.mode = mode
        self.max_ticks = max_ticks
        self.skip_missed = skip_missed
        self.initial_delay = initial_delay
        self.stop_on_error = stop_on_error
        self.name = name
        self.ticks: list[Tick] = []
        self.started_at: Optional[float] = None
        self._task: Optional[asyncio.Task] = None
        self._changed = asyncio.Condition()
        self._running = 0
        self.max_running = 0

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> "PeriodicTask":
        if self._task is not None:
            raise RuntimeError("already started")
        self._task = asyncio.get_running_loop().create_task(self._main(), name=self.name)
        return self

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():  # our own caller is being cancelled
                raise

    async def join(self) -> None:
        """Wait until the runner ends by itself (``max_ticks`` or ``stop_on_error``)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def __aenter__(self) -> "PeriodicTask":
        return self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    async def wait_ticks(self, n: int) -> list[Tick]:
        async with self._changed:
            await self._changed.wait_for(lambda: len(self.ticks) >= n)
            return self.ticks[:n]

    # -- internals -------------------------------------------------------------------------
    async def _sleep_until(self, when: float) -> None:
        loop = asyncio.get_running_loop()
        while (delay := when - loop.time()) > 0:
            await asyncio.sleep(delay)

    async def _run_tick(self, index: int, scheduled: float) -> bool:
        loop = asyncio.get_running_loop()
        tick = Tick(index, scheduled, loop.time())
        self._running += 1
        self.max_running = max(self.max_running, self._running)
        try:
            res = self._fn()
            if inspect.isawaitable(res):
                await res
        except Exception as exc:
            tick.error = exc
            stats.incr("periodic.errors")
            log.warning("%s tick %d failed: %r", self.name, index, exc)
        finally:
            self._running -= 1
            tick.ended = loop.time()
            self.ticks.append(tick)
            stats.incr("periodic.ticks")
            async with self._changed:
                self._changed.notify_all()
        return tick.error is None or not self.stop_on_error

    def _done(self) -> bool:
        return self.max_ticks is not None and len(self.ticks) >= self.max_ticks

    async def _main(self) -> None:
        loop = asyncio.get_running_loop()
        self.started_at = t0 = loop.time() + self.initial_delay
        if self.mode == "fixed_delay":
            await self._sleep_until(t0)
            n = 0
            while not self._done():
                if not await self._run_tick(n, loop.time()):
                    return
                n += 1
                if self._done():
                    return
                await asyncio.sleep(self.period)
            return
        k = 0
        while not self._done():
            due = t0 + k * self.period
            await self._sleep_until(due)
            if not await self._run_tick(k, due):
                return
            if self.skip_missed:
                behind = math.floor((loop.time() - t0) / self.period) + 1
                k = max(k + 1, behind)
            else:
                k += 1
