"""Race-free control: the lost update of examples/test_lost_update.py, with the read-modify-write
under a lock."""

import asyncio
import random

import pytest

from affidavit import access

BALANCE = {"amount": 0}
LOCK: dict = {}


async def deposit(amount: int) -> None:
    await asyncio.sleep(random.uniform(0, 0.003))
    async with LOCK["lock"]:
        current = BALANCE["amount"]
        access("BALANCE.amount", "read")
        await asyncio.sleep(0.0005)
        BALANCE["amount"] = current + amount
        access("BALANCE.amount", "write")


@pytest.mark.asyncio
async def test_concurrent_deposits() -> None:
    BALANCE["amount"] = 0
    LOCK["lock"] = asyncio.Lock()
    await asyncio.gather(deposit(10), deposit(20))
    assert BALANCE["amount"] == 30
