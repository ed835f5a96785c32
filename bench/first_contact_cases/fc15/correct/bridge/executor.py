"""Offloading blocking calls to threads, with caps and timeouts.

``asyncio.wait_for(loop.run_in_executor(...), timeout)`` gives up *waiting*
but cannot stop the thread.  :class:`WorkerPool` makes that explicit: a
timed-out job keeps its worker slot until it really returns, its result is
discarded, and :class:`~bridge.errors.BlockingTimeout` says whether the job
was still running.  The pool also caps concurrency with a semaphore so that a
burst of callers queues in asyncio instead of in the executor.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from typing import Any, Callable, Optional, TypeVar

from ._util import Counter
from .errors import BlockingTimeout, BridgeClosed

R = TypeVar("R")


async def run_blocking(fn: Callable[..., R], *args: Any,
                       timeout: Optional[float] = None,
                       executor: Optional[concurrent.futures.Executor] = None) -> R:
    """Run ``fn(*args)`` in *executor* (default: the loop's) with a timeout."""
    loop = asyncio.get_running_loop()
    started = threading.Event()

    def job() -> R:
        started.set()
        return fn(*args)

    fut = loop.run_in_executor(executor, job)
    try:
        return await asyncio.wait_for(fut, timeout)
    except asyncio.TimeoutError:
        raise BlockingTimeout(f"{getattr(fn, '__name__', fn)!s} took longer than "
                              f"{timeout}s", still_running=started.is_set()) from None


class WorkerPool:
    """A thread pool with a concurrency cap, counters and clean shutdown."""

    def __init__(self, max_workers: int = 4, *, name: str = "bridge-worker") -> None:
        self.max_workers = max_workers
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix=name)
        self._sem = asyncio.Semaphore(max_workers)
        self._active = Counter()
        self._closed = False
        self.completed = 0
        self.timed_out = 0
        self._done_lock = threading.Lock()

    @property
    def peak_active(self) -> int:
        return self._active.peak

    @property
    def active(self) -> int:
        return self._active.value

    @property
    def submitted(self) -> int:
        return self._active.total

    def _tracked(self, fn: Callable[..., R], *args: Any) -> R:
        with self._active:
            result = fn(*args)
        with self._done_lock:
            self.completed += 1
        return result

    async def run(self, fn: Callable[..., R], *args: Any,
                  timeout: Optional[float] = None) -> R:
        """Run ``fn(*args)`` on the pool; at most ``max_workers`` at once.

        The semaphore is held until the *thread* finishes, even when the
        caller stops waiting, so a pile of timed-out jobs cannot oversubscribe
        the pool.
        """
        if self._closed:
            raise BridgeClosed("pool is closed")
        loop = asyncio.get_running_loop()
        await self._sem.acquire()
        try:
            fut = loop.run_in_executor(self._executor,
                                       functools.partial(self._tracked, fn, *args))
        except BaseException:
            self._sem.release()
            raise
        fut.add_done_callback(lambda _f: self._sem.release())
        try:
            return await asyncio.wait_for(asyncio.shield(fut), timeout)
        except asyncio.TimeoutError:
            self.timed_out += 1
            raise BlockingTimeout(f"job exceeded {timeout}s",
                                  still_running=not fut.done()) from None

    async def map(self, fn: Callable[[Any], R], items: Any,
                  timeout: Optional[float] = None) -> list:
        """Run ``fn`` over *items* concurrently; results keep input order."""
        return list(await asyncio.gather(*(self.run(fn, it, timeout=timeout)
                                           for it in items)))

    async def aclose(self) -> None:
        """Stop accepting jobs and wait for running ones to finish."""
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self._executor.shutdown, True)

    async def __aenter__(self) -> "WorkerPool":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
