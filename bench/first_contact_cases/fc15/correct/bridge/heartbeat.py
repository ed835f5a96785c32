"""Periodic heartbeats and event-loop lag measurement.

A :class:`Heartbeat` runs a task that calls ``on_beat`` every ``interval``
seconds and records when it actually ran (``time.monotonic()``), so a test
or a health endpoint can see the largest gap.  A long CPU step on the loop
shows up directly as a large gap, which is how missed AMQP / websocket
heartbeats are usually diagnosed.  :class:`LagMonitor` measures how late a
``sleep(interval)`` wakes up.
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable, List, Optional, Union

BeatCallback = Callable[[int], Union[None, Awaitable[None]]]


class Heartbeat:
    def __init__(self, interval: float, on_beat: Optional[BeatCallback] = None,
                 *, clock: Callable[[], float] = time.monotonic) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.interval = interval
        self._on_beat = on_beat
        self._clock = clock
        self._task: Optional[asyncio.Task] = None
        self.beats: List[float] = []
        self.errors: List[BaseException] = []

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self.running:
            raise RuntimeError("heartbeat already running")
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        n = 0
        while True:
            self.beats.append(self._clock())
            if self._on_beat is not None:
                try:
                    res = self._on_beat(n)
                    if asyncio.iscoroutine(res):
                        await res
                except Exception as exc:  # a failing beat must not stop the others
                    self.errors.append(exc)
            n += 1
            await asyncio.sleep(self.interval)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    @property
    def max_gap(self) -> float:
        gaps = [b - a for a, b in zip(self.beats, self.beats[1:])]
        return max(gaps, default=0.0)

    async def __aenter__(self) -> "Heartbeat":
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


class LagMonitor:
    """Measure how late ``asyncio.sleep(interval)`` returns, in seconds."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.samples: List[float] = []
        self._task: Optional[asyncio.Task] = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t0 = loop.time()
            await asyncio.sleep(self.interval)
            self.samples.append(max(0.0, loop.time() - t0 - self.interval))

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    @property
    def worst(self) -> float:
        return max(self.samples, default=0.0)
