"""Internal helpers for handing results from threads to an event loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Optional


def set_if_pending(fut: asyncio.Future, result: Any = None,
                   exc: Optional[BaseException] = None) -> None:
    """Resolve *fut* unless it is already done (e.g. cancelled by a timeout).

    Must run on the future's loop thread.  A caller that gave up (``wait_for``
    timed out, the task was cancelled) leaves a cancelled future behind; the
    late result is then simply dropped instead of raising ``InvalidStateError``
    inside a loop callback.
    """
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(result)


def in_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    """Return True when called from the thread currently running *loop*."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def resolve_threadsafe(loop: asyncio.AbstractEventLoop, fut: asyncio.Future,
                       result: Any = None,
                       exc: Optional[BaseException] = None) -> bool:
    """Resolve *fut* from any thread.  Returns False if the loop is gone.

    The state check happens on the loop thread (inside :func:`set_if_pending`),
    never in the calling thread, so there is no window between "is it still
    pending?" and "set it".  A closed loop is not an error: nobody is left to
    read the result.
    """
    if in_loop_thread(loop):
        set_if_pending(fut, result, exc)
        return True
    try:
        loop.call_soon_threadsafe(set_if_pending, fut, result, exc)
    except RuntimeError:  # loop closed while we were working
        return False
    return True


class Counter:
    """A tiny thread-safe counter with a high-water mark."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0
        self.peak = 0
        self.total = 0

    def __enter__(self) -> "Counter":
        with self._lock:
            self.value += 1
            self.total += 1
            self.peak = max(self.peak, self.value)
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self.value -= 1
