"""Heartbeat watchdog: fires when no beat arrived within ``timeout`` seconds.

Beats are recorded synchronously (``beat()`` stores ``loop.time()``), so a beat that happened
before the deadline always wins, whatever the order the loop runs things in afterwards.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Callable, Optional

from . import stats

log = logging.getLogger("pacer.watchdog")


class Watchdog:
    def __init__(self, timeout: float, on_timeout: Optional[Callable[[float], Any]] = None, *,
                 rearm: bool = False, name: str = "watchdog") -> None:
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.timeout = timeout
        self._on_timeout = on_timeout
        self.rearm = rearm
        self.name = name
        self.last_beat: Optional[float] = None
        self.beats = 0
        self.fired_at: list[float] = []
        self.fired = asyncio.Event()
        self._task: Optional[asyncio.Task] = None

    def start(self) -> "Watchdog":
        loop = asyncio.get_running_loop()
        self.last_beat = loop.time()
        self._task = loop.create_task(self._watch(), name=self.name)
        return self

    def beat(self) -> None:
        self.last_beat = asyncio.get_running_loop().time()
        self.beats += 1
        stats.incr("watchdog.beats")

    @property
    def deadline(self) -> float:
        assert self.last_beat is not None, "not started"
        return self.last_beat + self.timeout

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                if asyncio.current_task().cancelling():
                    raise

    async def __aenter__(self) -> "Watchdog":
        return self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            delay = self.deadline - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
                continue  # re-read: a beat may have moved the deadline
            now = loop.time()
            self.fired_at.append(now)
            stats.incr("watchdog.fired")
            log.warning("%s: no beat for %.3fs", self.name, now - self.last_beat)
            self.fired.set()
            if self._on_timeout is not None:
                res = self._on_timeout(now - self.last_beat)
                if inspect.isawaitable(res):
                    await res
            if not self.rearm:
                return
            self.last_beat = loop.time()  # rearm: a fresh full period
