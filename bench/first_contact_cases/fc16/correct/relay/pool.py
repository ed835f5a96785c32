"""A thread-pool-backed runner for blocking calls, with timeouts.

``run`` wraps ``executor.submit`` with ``asyncio.wrap_future`` so the
concurrent future's completion is forwarded to the loop thread-safely.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Callable, Iterable, List, Optional

from .errors import CallTimeout, Closed


class BlockingPool:
    def __init__(self, workers: int = 4, name: str = "relay-pool") -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix=name)
        self._lock = threading.Lock()
        self._closed = False
        self.active = 0
        self.peak = 0
        self.completed = 0
        self.timed_out = 0

    def _wrap(self, fn: Callable[..., Any], started: threading.Event):
        def job(*args: Any) -> Any:
            started.set()
            with self._lock:
                self.active += 1
                self.peak = max(self.peak, self.active)
            try:
                return fn(*args)
            finally:
                with self._lock:
                    self.active -= 1
                    self.completed += 1
        return job

    async def run(self, fn: Callable[..., Any], *args: Any,
                  timeout: Optional[float] = None) -> Any:
        with self._lock:
            if self._closed:
                raise Closed("pool is closed")
        started = threading.Event()
        cfut = self._executor.submit(self._wrap(fn, started), *args)
        afut = asyncio.wrap_future(cfut)
        try:
            async with asyncio.timeout(timeout):
                return await afut
        except TimeoutError:
            cfut.cancel()  # only succeeds if the job has not started
            with self._lock:
                self.timed_out += 1
            raise CallTimeout("pool call timed out", started=started.is_set()) from None

    async def map(self, fn: Callable[[Any], Any], items: Iterable[Any],
                  timeout: Optional[float] = None) -> List[Any]:
        return list(await asyncio.gather(*(self.run(fn, x, timeout=timeout) for x in items)))

    async def aclose(self) -> None:
        with self._lock:
            self._closed = True
        await asyncio.to_thread(self._executor.shutdown, True)


async def to_thread_with_timeout(fn: Callable[..., Any], *args: Any, timeout: float) -> Any:
    """``asyncio.to_thread`` under ``asyncio.wait_for``.

    On timeout the thread keeps running; the caller just stops waiting.
    """
    return await asyncio.wait_for(asyncio.to_thread(fn, *args), timeout)
