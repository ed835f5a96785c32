"""Input for tests/test_cancel_forcing.py: a pool of one connection whose waiter is handed the
connection and cancelled by its wait_for before it resumes, so the connection is lost (the shape
of bpo-27585 and the asyncpg/httpcore pool leaks, in a dozen lines).

The test holds the connection while an impatient task waits for it with a timeout. The timeout is
armed before the test's own, shorter sleep: a step slow enough to make both timers due at once
runs the test's release and the waiter's cancel in one loop iteration, the hand-off first. The
cancel one step earlier (the test's sleep armed later than the timeout's deadline) finds a waiter
nobody handed anything; one step later (the sleep due alone) finds it resumed with the connection;
either way the test passes."""

import asyncio
import collections
import random

import pytest


class Pool:
    def __init__(self) -> None:
        self.free = ["conn"]
        self.waiters: collections.deque = collections.deque()

    async def acquire(self) -> str:
        if self.free:
            return self.free.pop()
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        return await fut  # handed the connection, then cancelled here: it is lost

    def release(self, conn: str) -> None:
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_result(conn)
                return
        self.free.append(conn)


@pytest.mark.asyncio
async def test_connection_comes_back() -> None:
    pool = Pool()
    conn = await pool.acquire()

    async def impatient() -> None:
        try:
            got = await asyncio.wait_for(pool.acquire(), timeout=0.001)
            pool.release(got)
        except asyncio.TimeoutError:
            pass

    task = asyncio.create_task(impatient())
    await asyncio.sleep(0)  # impatient arms its timeout first
    await asyncio.sleep(random.uniform(0.0005, 0.0009))  # work with the connection
    pool.release(conn)
    await task
    assert pool.free == ["conn"]
