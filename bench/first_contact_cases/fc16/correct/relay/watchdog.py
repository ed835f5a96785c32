"""A watchdog thread that the event loop must keep feeding.

The loop calls ``pet()``; the watchdog thread checks, with
``time.monotonic()``, how long ago the last pet was.  If the gap exceeds
``timeout`` it reports the trip back *on the loop* via
``call_soon_threadsafe``.  ``stop()`` wakes and joins the thread.
"""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Callable, List, Optional


class Watchdog:
    def __init__(self, timeout: float, on_trip: Callable[[float], None],
                 check_interval: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        self.timeout = timeout
        self.check_interval = check_interval or timeout / 4
        self._on_trip = on_trip
        self._clock = clock
        self._lock = threading.Lock()
        self._last = clock()
        self._stop = threading.Event()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self.trips: List[float] = []  # gaps, as seen on the watchdog thread
        self.checks = 0

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("watchdog already started")
        self._loop = asyncio.get_running_loop()
        self.pet()
        self._thread = threading.Thread(target=self._watch, name="relay-watchdog", daemon=True)
        self._thread.start()

    def pet(self) -> None:
        with self._lock:
            self._last = self._clock()

    def _watch(self) -> None:
        while not self._stop.wait(self.check_interval):
            with self._lock:
                gap = self._clock() - self._last
                self.checks += 1
                tripped = gap > self.timeout
                if tripped:
                    self._last = self._clock()  # one report per stall
            if tripped:
                self.trips.append(gap)
                try:
                    self._loop.call_soon_threadsafe(self._on_trip, gap)
                except RuntimeError:  # loop already closed
                    return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    async def astop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)


async def feed(dog: Watchdog, every: float, stop: asyncio.Event) -> int:
    """Pet ``dog`` every ``every`` seconds until ``stop`` is set."""
    n = 0
    while not stop.is_set():
        dog.pet()
        n += 1
        try:
            await asyncio.wait_for(stop.wait(), every)
        except asyncio.TimeoutError:
            pass
    return n
