"""A connection limiter shaped like aiohttp's BaseConnector in 3.10 (aio-libs/aiohttp#9670).

`release()` takes the oldest waiter off the queue and wakes it. A waiter that times out after it was
woken finds itself already off the queue, ignores that, and leaves: the slot it was woken for is free
but nobody else is told, so the requests still queued wait until their own timeouts.
"""

import asyncio
import collections
import random


class Connector:
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._acquired = 0
        self._waiters: collections.deque = collections.deque()

    async def connect(self) -> "Connection":
        if self._acquired >= self._limit or self._waiters:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except BaseException:
                try:
                    self._waiters.remove(fut)
                except ValueError:
                    pass  # release() already took us off the queue
                raise
        self._acquired += 1
        return Connection(self)

    def _release_waiter(self) -> None:
        while self._waiters and self._acquired < self._limit:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def release(self) -> None:
        self._acquired -= 1
        self._release_waiter()


class Connection:
    def __init__(self, connector: Connector) -> None:
        self._connector = connector

    async def roundtrip(self, path: str) -> str:
        await asyncio.sleep(random.uniform(0, 0.002))  # the server's reply time
        return f"200 {path}"

    def release(self) -> None:
        self._connector.release()


class Session:
    def __init__(self, limit: int) -> None:
        self.connector = Connector(limit)

    async def get(self, path: str) -> str:
        conn = await self.connector.connect()
        try:
            return await conn.roundtrip(path)
        finally:
            conn.release()
