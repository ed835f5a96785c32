"""A connection pool shaped like httpcore's AsyncConnectionPool before the fix for encode/httpcore#1093.

The pool assigns a queued request a new connection and wakes it; the request then establishes the
connection. A request cancelled after the assignment and before the connection is established leaves
the connection in the pool, never connected: not idle, not closed, not available. It holds its slot
forever, and once every slot is held so, every later request waits until its pool timeout.
"""

import asyncio
import random


class Connection:
    def __init__(self) -> None:
        self.state = "NEW"

    def is_available(self) -> bool:
        return self.state == "IDLE"

    def is_closed(self) -> bool:
        return self.state == "CLOSED"

    async def connect(self) -> None:
        self.state = "CONNECTING"
        await asyncio.sleep(random.uniform(0, 0.002))  # TCP and TLS handshakes
        self.state = "ACTIVE"

    async def handle(self, path: str) -> str:
        try:
            await asyncio.sleep(random.uniform(0, 0.002))  # the origin's reply time
        except BaseException:
            self.close()  # a half-read response: this connection cannot be reused
            raise
        return f"200 {path}"

    def close(self) -> None:
        self.state = "CLOSED"


class PoolRequest:
    def __init__(self) -> None:
        self.assigned: asyncio.Future = asyncio.get_running_loop().create_future()


class ConnectionPool:
    def __init__(self, max_connections: int) -> None:
        self._max = max_connections
        self._connections: list = []
        self._requests: list = []

    def _assign(self) -> None:
        self._connections = [c for c in self._connections if not c.is_closed()]
        for request in self._requests:
            if request.assigned.done():
                continue
            idle = next((c for c in self._connections if c.is_available()), None)
            if idle is not None:
                idle.state = "ACTIVE"
                request.assigned.set_result(idle)
            elif len(self._connections) < self._max:
                fresh = Connection()
                self._connections.append(fresh)
                request.assigned.set_result(fresh)

    async def request(self, path: str) -> str:
        pool_request = PoolRequest()
        self._requests.append(pool_request)
        self._assign()
        try:
            conn = await pool_request.assigned
            if conn.state in ("NEW", "CONNECTING"):
                await conn.connect()
            response = await conn.handle(path)
        except BaseException:
            self._requests.remove(pool_request)
            self._assign()
            raise
        conn.state = "IDLE"
        self._requests.remove(pool_request)
        self._assign()
        return response
