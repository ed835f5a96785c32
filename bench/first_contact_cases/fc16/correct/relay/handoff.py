"""Helpers that hand results from arbitrary threads to an event loop.

The rule enforced here: a future that belongs to a loop is only ever touched
*on that loop's thread*.  Threads go through ``call_soon_threadsafe``; the
state check ("is the future still pending?") runs inside the scheduled
callback, so there is no window between check and set.
"""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Optional


def _settle(fut: asyncio.Future, value: Any, exc: Optional[BaseException]) -> None:
    if fut.done():  # cancelled by a timeout, or already settled: drop quietly
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(value)


def resolve_threadsafe(loop: asyncio.AbstractEventLoop, fut: asyncio.Future,
                       value: Any = None, exc: Optional[BaseException] = None) -> bool:
    """Settle ``fut`` from any thread.  Returns False if the loop is closed."""
    try:
        loop.call_soon_threadsafe(_settle, fut, value, exc)
    except RuntimeError:  # loop closed: nobody is listening any more
        return False
    return True


def on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    """True if the caller is running inside ``loop`` on its own thread."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class Completion:
    """A one-shot slot: any thread fills it, coroutines on one loop await it."""

    def __init__(self, loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
        self._loop = loop or asyncio.get_running_loop()
        self._fut: asyncio.Future = self._loop.create_future()
        self._lock = threading.Lock()
        self._claimed = False

    def _claim(self) -> bool:
        with self._lock:
            if self._claimed:
                return False
            self._claimed = True
            return True

    def set_result(self, value: Any) -> bool:
        """Fill the slot; the first caller wins.  Safe from any thread."""
        if not self._claim():
            return False
        if on_loop_thread(self._loop):
            _settle(self._fut, value, None)
            return True
        return resolve_threadsafe(self._loop, self._fut, value)

    def set_exception(self, exc: BaseException) -> bool:
        if not self._claim():
            return False
        if on_loop_thread(self._loop):
            _settle(self._fut, None, exc)
            return True
        return resolve_threadsafe(self._loop, self._fut, None, exc)

    @property
    def claimed(self) -> bool:
        with self._lock:
            return self._claimed

    async def wait(self, timeout: Optional[float] = None) -> Any:
        # shield: a timed-out waiter must not cancel the shared future
        return await asyncio.wait_for(asyncio.shield(self._fut), timeout)


def callback_to_future(register, *args: Any) -> asyncio.Future:
    """Adapt a ``register(*args, callback)`` API whose callback may run on any
    thread and is called as ``callback(error, value)``."""
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def callback(error: Optional[BaseException], value: Any = None) -> None:
        if on_loop_thread(loop):
            _settle(fut, value, error)
        else:
            resolve_threadsafe(loop, fut, value, error)

    register(*args, callback)
    return fut
