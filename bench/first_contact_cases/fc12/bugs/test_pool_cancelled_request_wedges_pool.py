"""Model of https://github.com/encode/httpcore/issues/830 ("AsyncConnectionPool hangs future
connections sometimes when a connection get cancelled").

The pool registers a request's status in `_requests`, then awaits closing expired connections, then
assigns connections to waiting statuses. Nothing removes the status if the caller is cancelled
between the append and the point where it owns its connection. With max_connections=1 a stale
status can be handed the only connection, which is then never released.

Request A runs under `wait_for(..., 0.5)` and first has to close an expired connection (a 0.02 s
graceful close); request B follows with its own 1 s deadline. A may time out (that is allowed);
B must be served. Under natural timing both complete.

Bad interleaving: closing the expired connection takes longer than A's 0.5 s deadline (a slow peer).
A is cancelled inside `_close_expired()`, its status stays queued, takes the connection later, and B
waits forever: the pool is wedged.
"""
import asyncio

import pytest


class Conn:
    def __init__(self, n, expired=False):
        self.n, self.expired = n, expired

    async def aclose(self):
        await asyncio.sleep(0.02)  # graceful TLS close with the peer

    async def send(self, what):
        await asyncio.sleep(0.01)
        return f"{what} via conn{self.n}"


class Status:
    def __init__(self):
        self.conn = None
        self.ready = asyncio.Event()


class Pool:
    def __init__(self):
        self._lock = asyncio.Lock()
        self._requests = []
        self._conns = [Conn(0, expired=True)]
        self._made = 0

    async def _close_expired(self):
        for conn in [c for c in self._conns if c.expired]:
            self._conns.remove(conn)
            await conn.aclose()

    def _assign(self):
        busy = {s.conn for s in self._requests if s.conn}
        for status in self._requests:
            if status.conn is None:
                free = [c for c in self._conns if c not in busy]
                if free:
                    status.conn = free[0]
                elif len(self._conns) < 1:
                    self._made += 1
                    status.conn = Conn(self._made)
                    self._conns.append(status.conn)
                else:
                    break
                busy.add(status.conn)
                status.ready.set()

    async def request(self, what):
        async with self._lock:
            status = Status()
            self._requests.append(status)
            await self._close_expired()
            self._assign()
        await status.ready.wait()
        try:
            return await status.conn.send(what)
        finally:
            async with self._lock:
                self._requests.remove(status)
                self._assign()


@pytest.mark.asyncio
async def test_pool_serves_the_next_request():
    pool = Pool()
    try:
        a = await asyncio.wait_for(pool.request("GET /a"), 0.5)
    except asyncio.TimeoutError:
        a = "timed out"  # allowed: A's deadline is its own business
    assert a in ("GET /a via conn1", "timed out")
    try:
        b = await asyncio.wait_for(pool.request("GET /b"), 1.0)
    except asyncio.TimeoutError:
        pytest.fail(f"pool wedged: {len(pool._requests)} queued, the connection went to a cancelled request")
    assert b == "GET /b via conn1"
