"""Starvation by a blocking call: a synchronous time.sleep in a coroutine stalls the loop; the lease expires.

The keepalive renews a 20 ms lease every 4 ms. Now and then the snapshot writer blocks the whole
event loop for 25 ms with a synchronous call; the keepalive wakes up too late and finds the lease
already expired.
"""

import asyncio
import random
import time

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "starvation", "resource": "event loop"}

TTL = 0.02


class Lease:
    def __init__(self, now: float) -> None:
        self.expires = now + TTL
        self.lost = False

    async def keepalive(self) -> None:
        loop = asyncio.get_running_loop()
        for _ in range(3):
            await asyncio.sleep(0.004)
            if loop.time() > self.expires:
                self.lost = True
            self.expires = loop.time() + TTL


async def write_snapshot() -> None:
    await asyncio.sleep(0.002)
    if random.random() < 0.3:  # a large snapshot
        time.sleep(0.025)  # written synchronously: every task on the loop waits


@pytest.mark.asyncio
async def test_lease_is_kept() -> None:
    lease = Lease(asyncio.get_running_loop().time())
    await asyncio.gather(lease.keepalive(), write_snapshot())
    assert not lease.lost, "the lease expired while the loop was blocked"
