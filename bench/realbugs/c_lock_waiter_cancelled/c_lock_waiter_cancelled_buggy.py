"""A FIFO asyncio lock as it was before bpo-27585, and a table that serialises its writers with it.

`release()` marks the lock free and wakes the first waiter; the waiter only takes the lock when it
resumes. A waiter that is cancelled after it was woken and before it resumed leaves without taking
the lock and without waking anyone else: the waiters behind it sleep until something else releases.
"""

import asyncio
import collections
import random


class Lock:
    def __init__(self) -> None:
        self._waiters: collections.deque = collections.deque()
        self._locked = False

    def locked(self) -> bool:
        return self._locked

    async def acquire(self) -> bool:
        if not self._locked and all(w.cancelled() for w in self._waiters):
            self._locked = True
            return True
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
            self._locked = True
            return True
        finally:
            self._waiters.remove(fut)

    def release(self) -> None:
        if not self._locked:
            raise RuntimeError("Lock is not acquired.")
        self._locked = False
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(True)
                break

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc) -> None:
        self.release()


class Table:
    """Rows written one writer at a time, as a sqlite-backed store would."""

    def __init__(self) -> None:
        self._lock = Lock()
        self.rows: list = []

    async def write(self, row: object) -> None:
        async with self._lock:
            await asyncio.sleep(random.uniform(0, 0.002))  # the write itself
            self.rows.append(row)
