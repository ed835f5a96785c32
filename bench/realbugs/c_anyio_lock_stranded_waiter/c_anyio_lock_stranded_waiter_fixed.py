"""The same lock after the fix: release() prunes cancelled waiters and hands over to a live one."""

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
        # Waiters cancelled but not yet cleaned up cannot take the lock: hand it to the first live one.
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.cancelled():
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
