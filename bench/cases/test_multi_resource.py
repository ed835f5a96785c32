"""Multi-resource lost update: each sale reads stock and sold, awaits the payment, then writes both.

Two dictionaries move together; a sale that read both before another sale wrote them writes both
back stale, so stock and sold each lose an update.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "lost_update", "resource": ["Shop#0.stock", "Shop#0.sold"]}


class Shop:
    def __init__(self) -> None:
        self.stock = {"lamp": 5}
        self.sold = {"lamp": 0}

    async def sell(self, sku: str) -> None:
        await asyncio.sleep(random.uniform(0, 0.008))  # the customer checks out
        in_stock = self.stock[sku]
        sold = self.sold[sku]
        await asyncio.sleep(0.0005)  # the payment is authorised
        self.stock[sku] = in_stock - 1
        self.sold[sku] = sold + 1


@pytest.mark.asyncio
async def test_three_sales() -> None:
    shop = Shop()
    await asyncio.gather(shop.sell("lamp"), shop.sell("lamp"), shop.sell("lamp"))
    assert shop.stock["lamp"] == 2
    assert shop.sold["lamp"] == 3
