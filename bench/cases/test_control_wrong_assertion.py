"""Control (deterministic): the assertion is simply wrong; it fails on every run, with no concurrency.

One coroutine computes a total and the test expects the wrong number. It is not flaky and not a
race: the engine must say it is deterministic and claim no concurrency cause.
"""

import asyncio

import pytest

EXPECTED = {"verdict": "deterministic", "cause": None}


async def order_total(prices: list) -> int:
    await asyncio.sleep(0.0005)  # the price service
    return sum(prices)


@pytest.mark.asyncio
async def test_total() -> None:
    total = await order_total([3, 4, 5])
    assert total == 13  # wrong: 3 + 4 + 5 is 12
