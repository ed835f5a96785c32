"""A FIFO queue shared by threads and one event loop (janus-style).

Threads use :meth:`BridgeQueue.put` / :meth:`BridgeQueue.get` (blocking, with
optional timeouts); coroutines on the owning loop use :meth:`BridgeQueue.aput`
/ :meth:`BridgeQueue.aget`.  Everything is guarded by one ``threading.Lock``:
an async waiter is *registered under the same lock* under which it saw the
queue empty (or full), so a put from a thread can never slip in between the
check and the registration and be lost.  Wake-ups to the loop always travel
through ``call_soon_threadsafe``; the waiter re-checks the state when it runs.

Closing is graceful: items already queued can still be taken, then ``get``
raises :class:`~bridge.errors.BridgeClosed`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from typing import Deque, Generic, List, Optional, TypeVar

from ._util import in_loop_thread, set_if_pending
from .errors import BridgeClosed, QueueEmpty, QueueFull

T = TypeVar("T")


class BridgeQueue(Generic[T]):
    """Bounded (``maxsize > 0``) or unbounded FIFO with two faces."""

    def __init__(self, maxsize: int = 0, *,
                 loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
        self._loop = loop if loop is not None else asyncio.get_running_loop()
        self.maxsize = maxsize
        self._items: Deque[T] = deque()
        self._lock = threading.Lock()
        self._not_empty = threading.Condition(self._lock)
        self._not_full = threading.Condition(self._lock)
        self._all_done = threading.Condition(self._lock)
        self._getters: List[asyncio.Future] = []
        self._putters: List[asyncio.Future] = []
        self._joiners: List[asyncio.Future] = []
        self._unfinished = 0
        self._closed = False

    # -- state -----------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def qsize(self) -> int:
        with self._lock:
            return len(self._items)

    @property
    def unfinished_tasks(self) -> int:
        with self._lock:
            return self._unfinished

    def _full_locked(self) -> bool:
        return 0 < self.maxsize <= len(self._items)

    # -- wake-ups (called with the lock held) ----------------------------
    def _wake_locked(self, waiters: List[asyncio.Future]) -> None:
        if not waiters:
            return
        pending = list(waiters)
        waiters.clear()
        if in_loop_thread(self._loop):
            for fut in pending:
                set_if_pending(fut)
            return
        try:
            for fut in pending:
                self._loop.call_soon_threadsafe(set_if_pending, fut)
        except RuntimeError:  # loop closed: nobody is waiting any more
            pass

    def _after_put_locked(self, item: T) -> None:
        self._items.append(item)
        self._unfinished += 1
        self._not_empty.notify()
        self._wake_locked(self._getters)

    def _after_get_locked(self) -> T:
        item = self._items.popleft()
        self._not_full.notify()
        self._wake_locked(self._putters)
        return item

    # -- thread side -----------------------------------------------------
    def put(self, item: T, timeout: Optional[float] = None) -> None:
        """Blocking put for threads.  Raises QueueFull after *timeout*."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                if self._closed:
                    raise BridgeClosed("queue is closed")
                if not self._full_locked():
                    self._after_put_locked(item)
                    return
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise QueueFull("no free slot")
                self._not_full.wait(remaining)

    def put_nowait(self, item: T) -> None:
        """Non-blocking put usable from any thread, including the loop's."""
        with self._lock:
            if self._closed:
                raise BridgeClosed("queue is closed")
            if self._full_locked():
                raise QueueFull("no free slot")
            self._after_put_locked(item)

    def get(self, timeout: Optional[float] = None) -> T:
        """Blocking get for threads.  Raises QueueEmpty after *timeout*."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                if self._items:
                    return self._after_get_locked()
                if self._closed:
                    raise BridgeClosed("queue is closed and drained")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise QueueEmpty("nothing to get")
                self._not_empty.wait(remaining)

    def task_done(self) -> None:
        """Mark one item as processed (either side may call it)."""
        with self._lock:
            if self._unfinished <= 0:
                raise ValueError("task_done() called too many times")
            self._unfinished -= 1
            if self._unfinished == 0:
                self._all_done.notify_all()
                self._wake_locked(self._joiners)

    def join(self, timeout: Optional[float] = None) -> bool:
        """Thread side: wait until every put item was marked done."""
        with self._lock:
            return self._all_done.wait_for(lambda: self._unfinished == 0, timeout)

    def close(self) -> None:
        """Refuse new items and wake every waiter on both sides."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._not_empty.notify_all()
            self._not_full.notify_all()
            self._wake_locked(self._getters)
            self._wake_locked(self._putters)

    # -- loop side -------------------------------------------------------
    async def _wait(self, fut: asyncio.Future, waiters: List[asyncio.Future]) -> None:
        try:
            await fut
        finally:
            with self._lock:
                if fut in waiters:
                    waiters.remove(fut)
                    # We were cancelled while registered: nothing to hand on.
                elif fut.cancelled():
                    # We were woken *and* cancelled: pass the wake-up on so a
                    # sibling waiter does not sleep through the item.
                    self._wake_locked(waiters)

    async def aput(self, item: T) -> None:
        """Coroutine put; waits while the queue is full."""
        while True:
            with self._lock:
                if self._closed:
                    raise BridgeClosed("queue is closed")
                if not self._full_locked():
                    self._after_put_locked(item)
                    return
                fut = self._loop.create_future()
                self._putters.append(fut)
            await self._wait(fut, self._putters)

    async def aget(self) -> T:
        """Coroutine get; waits while the queue is empty and open."""
        while True:
            with self._lock:
                if self._items:
                    return self._after_get_locked()
                if self._closed:
                    raise BridgeClosed("queue is closed and drained")
                fut = self._loop.create_future()
                self._getters.append(fut)
            await self._wait(fut, self._getters)

    async def ajoin(self) -> None:
        """Coroutine join; returns once the unfinished count reaches zero."""
        while True:
            with self._lock:
                if self._unfinished == 0:
                    return
                fut = self._loop.create_future()
                self._joiners.append(fut)
            await self._wait(fut, self._joiners)

    def __aiter__(self) -> "BridgeQueue[T]":
        return self

    async def __anext__(self) -> T:
        try:
            return await self.aget()
        except BridgeClosed:
            raise StopAsyncIteration from None
