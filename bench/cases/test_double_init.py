"""Check-then-act: two handlers both see no connection yet, and both open one.

`get()` checks `self.conn is None`, awaits the (slow) connect, then stores the result. A second
caller arriving during the connect sees None too, so the pool opens two connections and the
first one is overwritten (and leaked).
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "lost_update", "resource": "Pool#0.conn"}


class Pool:
    def __init__(self) -> None:
        self.conn = None
        self.opened = 0

    async def _connect(self) -> object:
        self.opened += 1
        await asyncio.sleep(0.001)  # TCP + TLS handshake
        return object()

    async def get(self) -> object:
        if self.conn is None:
            conn = await self._connect()
            self.conn = conn
        return self.conn


async def handle_request(pool: Pool) -> object:
    await asyncio.sleep(random.uniform(0, 0.006))  # requests arrive at their own pace
    return await pool.get()


@pytest.mark.asyncio
async def test_one_connection_is_shared() -> None:
    pool = Pool()
    first, second = await asyncio.gather(handle_request(pool), handle_request(pool))
    assert pool.opened == 1
    assert first is second
