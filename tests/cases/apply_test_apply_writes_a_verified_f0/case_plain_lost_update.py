"""A lost update: two deposits read the balance, wait for I/O, and write back what they read."""

import asyncio
import random

import pytest


BALANCE = {"amount": 0}


async def deposit(amount: int) -> None:
    await asyncio.sleep(random.uniform(0, 0.003))  # the request arrives after some network latency
    current = BALANCE["amount"]
    await asyncio.sleep(0.0005)  # the ledger write takes a moment
    BALANCE["amount"] = current + amount


@pytest.mark.asyncio
async def test_concurrent_deposits() -> None:
    BALANCE["amount"] = 0
    await asyncio.gather(deposit(10), deposit(20))
    assert BALANCE["amount"] == 30
