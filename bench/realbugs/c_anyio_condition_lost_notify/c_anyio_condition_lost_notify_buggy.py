"""A condition variable shaped like anyio's Condition before agronholm/anyio#1075, and a buffer on it.

`notify(1)` takes the first waiter's event off the list and sets it. A waiter cancelled after its
event was set and before it resumed leaves with the notification: nobody else is woken, and the
message that was announced sits in the buffer while the other consumers sleep.
"""

import asyncio
import collections


class Condition:
    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._waiters: collections.deque = collections.deque()

    async def __aenter__(self) -> None:
        await self._lock.acquire()

    async def __aexit__(self, *exc) -> None:
        self._lock.release()

    def notify(self, n: int = 1) -> None:
        for _ in range(n):
            try:
                event = self._waiters.popleft()
            except IndexError:
                break
            event.set()

    async def wait(self) -> None:
        event = asyncio.Event()
        self._waiters.append(event)
        self._lock.release()
        try:
            await event.wait()
        except BaseException:
            if not event.is_set():
                self._waiters.remove(event)
            raise
        finally:
            await self._lock.acquire()


class Buffer:
    """Messages announced one notify per message; `drained()` returns once all were taken."""

    def __init__(self) -> None:
        self._cond = Condition()
        self._items: collections.deque = collections.deque()
        self._empty = asyncio.Event()
        self._empty.set()

    async def put(self, item: object) -> None:
        async with self._cond:
            self._items.append(item)
            self._empty.clear()
            self._cond.notify(1)

    async def get(self) -> object:
        async with self._cond:
            while not self._items:
                await self._cond.wait()
            item = self._items.popleft()
            if not self._items:
                self._empty.set()
            return item

    async def drained(self) -> None:
        await self._empty.wait()
