"""A pool shaped like asyncpg's before MagicStack/asyncpg#548, with lazily connected holders.

`acquire(timeout=...)` runs the acquisition under `asyncio.wait_for`. The acquisition takes a holder
off the queue and then connects it. When the timeout cancels it after the holder left the queue and
before it was returned to the caller, the holder belongs to nobody: the pool is one connection short
for good.
"""

import asyncio
import random


class Holder:
    def __init__(self, number: int) -> None:
        self.number = number
        self.connected = False

    async def connect(self) -> None:
        await asyncio.sleep(random.uniform(0, 0.004))  # startup and authentication
        self.connected = True

    async def fetch(self, sql: str) -> list:
        await asyncio.sleep(random.uniform(0, 0.001))
        return [(self.number, sql)]


class Pool:
    def __init__(self, size: int) -> None:
        self._size = size
        self._queue: asyncio.Queue = asyncio.Queue()
        for number in range(size):
            self._queue.put_nowait(Holder(number))

    def get_size(self) -> int:
        return self._size

    def get_idle_size(self) -> int:
        return self._queue.qsize()

    async def _acquire_impl(self) -> Holder:
        holder = await self._queue.get()
        if not holder.connected:
            await holder.connect()
        return holder

    async def acquire(self, timeout: float) -> Holder:
        return await asyncio.wait_for(self._acquire_impl(), timeout=timeout)

    def release(self, holder: Holder) -> None:
        self._queue.put_nowait(holder)
