"""The same pool after the fix: a check interrupted by cancellation returns the connection."""

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
            except BaseException:
                # Cancelled (or worse) during the check: the connection goes back, the
                # cancellation goes on.
                self._pool.put_nowait(conn)
                raise
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
