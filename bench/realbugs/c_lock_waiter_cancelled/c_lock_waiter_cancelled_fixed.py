"""The same lock after bpo-27585: a waiter cancelled after it was woken wakes the next waiter."""

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
            try:
                await fut
            finally:
                self._waiters.remove(fut)
        except asyncio.CancelledError:
            # Woken and cancelled before resuming: the wake-up was meant for us, pass it on.
            if not self._locked:
                self._wake_up_first()
            raise
        self._locked = True
        return True

    def release(self) -> None:
        if not self._locked:
            raise RuntimeError("Lock is not acquired.")
        self._locked = False
        self._wake_up_first()

    def _wake_up_first(self) -> None:
        # Only the head: if it was already woken (or cancelled), it is on its way and will wake
        # the next one itself if it does not take the lock.
        if self._waiters:
            fut = self._waiters[0]
            if not fut.done():
                fut.set_result(True)

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
