"""A lost update whose innermost await is three frames down: deposit reads the balance, awaits
the ledger through save() and flush() down to io(), and writes back what it read. The await that
explains it is deposit's own `await save()`, not io()'s sleep."""

import asyncio
import random

import pytest


BALANCE = {"amount": 0}


async def io() -> None:
    await asyncio.sleep(0.0005)  # chain: io


async def flush() -> None:
    await io()  # chain: flush


async def save() -> None:
    await flush()  # chain: save


async def deposit(amount: int) -> None:
    await asyncio.sleep(random.uniform(0, 0.003))  # the request arrives after some network latency
    current = BALANCE["amount"]
    await save()  # chain: named
    BALANCE["amount"] = current + amount


@pytest.mark.asyncio
async def test_concurrent_deposits() -> None:
    BALANCE["amount"] = 0
    await asyncio.gather(deposit(10), deposit(20))
    assert BALANCE["amount"] == 30
