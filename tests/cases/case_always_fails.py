"""Control: fails every time for a reason that has nothing to do with concurrency."""

import asyncio

import pytest


def price_with_tax(price: float) -> float:
    return price * 1.2


@pytest.mark.asyncio
async def test_price() -> None:
    await asyncio.sleep(0)
    assert price_with_tax(100) == 119
