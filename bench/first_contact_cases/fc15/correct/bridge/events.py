"""An event that threads can set and coroutines can await.

``asyncio.Event`` is not thread-safe: calling ``set()`` from a worker thread
resolves waiter futures off the loop thread and does not wake a loop that is
blocked in ``select()``.  :class:`ThreadSafeEvent` keeps its flag behind a
``threading.Lock``; async waiters register under that lock and are woken
through ``call_soon_threadsafe``, threads wait on a ``threading.Condition``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import List, Optional, Tuple

from ._util import in_loop_thread, set_if_pending


class ThreadSafeEvent:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._flag = False
        self._waiters: List[Tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []
        self.set_count = 0

    def is_set(self) -> bool:
        with self._lock:
            return self._flag

    def set(self) -> None:
        """Set the flag and wake every waiter (any thread, any loop)."""
        with self._lock:
            if self._flag:
                return
            self._flag = True
            self.set_count += 1
            self._cond.notify_all()
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            if in_loop_thread(loop):
                set_if_pending(fut, True)
                continue
            try:
                loop.call_soon_threadsafe(set_if_pending, fut, True)
            except RuntimeError:  # that loop is closed; its waiter is gone
                pass

    def clear(self) -> None:
        with self._lock:
            self._flag = False

    async def wait(self) -> bool:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._flag:
                return True
            fut = loop.create_future()
            self._waiters.append((loop, fut))
        try:
            return await fut
        finally:
            with self._lock:
                if (loop, fut) in self._waiters:
                    self._waiters.remove((loop, fut))

    def wait_sync(self, timeout: Optional[float] = None) -> bool:
        with self._lock:
            return self._cond.wait_for(lambda: self._flag, timeout)
