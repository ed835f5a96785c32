"""A hand-off lock shaped like anyio's asyncio Lock before agronholm/anyio#1145, and a job using it.

`release()` hands the lock straight to the first waiter. A waiter that was cancelled (its future is
cancelled) but whose `acquire()` has not yet run its cleanup is still first in the queue; `release()`
skips it and just frees the lock, waking nobody. The cancelled waiter then removes itself, and the
live waiter behind it sleeps while the lock is free; later callers queue behind it.
"""

import asyncio
import collections
import random


class Lock:
    def __init__(self) -> None:
        self._locked = False
        self._waiters: collections.deque = collections.deque()

    async def acquire(self) -> None:
        if not self._locked and not self._waiters:
            self._locked = True
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut  # resolved by release(): the lock is ours, still marked locked
        except asyncio.CancelledError:
            if fut in self._waiters:
                self._waiters.remove(fut)
            elif fut.done() and not fut.cancelled():
                self.release()  # handed the lock and cancelled before resuming: pass it on
            raise

    def release(self) -> None:
        if self._waiters:
            fut = self._waiters[0]
            if not fut.cancelled():
                self._waiters.popleft()
                fut.set_result(None)
                return
        self._locked = False

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc) -> None:
        self.release()


class Exporter:
    def __init__(self) -> None:
        self._lock = Lock()
        self.exported: list = []

    async def export(self, batch: str) -> None:
        async with self._lock:
            await asyncio.sleep(random.uniform(0, 0.002))  # one export at a time to the backend
            self.exported.append(batch)
