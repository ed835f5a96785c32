"""Lost update: two reservations read the stock level, await the warehouse, and write back what they read.

Both reservations arrive within a few milliseconds; when the second one reads `stock` before
the first has written it back, one reservation is silently undone.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "lost_update", "resource": "Inventory#0.stock"}


class Inventory:
    def __init__(self, stock: int) -> None:
        self.stock = stock

    async def reserve(self, count: int) -> None:
        await asyncio.sleep(random.uniform(0, 0.005))  # the order comes in over the network
        available = self.stock
        await asyncio.sleep(0.0005)  # the warehouse confirms the pick
        self.stock = available - count


@pytest.mark.asyncio
async def test_two_reservations() -> None:
    inventory = Inventory(10)
    await asyncio.gather(inventory.reserve(2), inventory.reserve(3))
    assert inventory.stock == 5
