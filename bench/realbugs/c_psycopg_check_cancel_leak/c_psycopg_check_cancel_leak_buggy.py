"""A pool shaped like psycopg_pool's AsyncConnectionPool with `check=` before psycopg/psycopg#1214.

`getconn()` takes a connection from the pool and checks it with a round trip before handing it out.
A failed check is handled with `except Exception`; a cancellation during the check is not an
Exception, so the connection is neither handed out nor put back: the pool has lost it.
"""

import asyncio
import contextlib
import random


class Connection:
    def __init__(self, number: int) -> None:
        self.number = number
        self.broken = False

    async def execute(self, sql: str) -> str:
        await asyncio.sleep(random.uniform(0, 0.0015))  # a round trip to the server
        if self.broken:
            raise ConnectionError("server closed the connection")
        return f"#{self.number}: {sql or 'empty query'}"


async def check_connection(conn: Connection) -> None:
    await conn.execute("")


class AsyncConnectionPool:
    def __init__(self, size: int) -> None:
        self._size = size
        self._pool: asyncio.Queue = asyncio.Queue()
        for number in range(size):
            self._pool.put_nowait(Connection(number))

    def get_stats(self) -> dict:
        return {"pool_size": self._size, "pool_available": self._pool.qsize()}

    async def getconn(self) -> Connection:
        while True:
            conn = await self._pool.get()
            try:
                await check_connection(conn)
            except Exception:
                # A dead connection: replace it with a fresh one and try again.
                self._pool.put_nowait(Connection(conn.number))
                continue
            return conn

    def putconn(self, conn: Connection) -> None:
        self._pool.put_nowait(conn)

    @contextlib.asynccontextmanager
    async def connection(self):
        conn = await self.getconn()
        try:
            yield conn
        finally:
            self.putconn(conn)
