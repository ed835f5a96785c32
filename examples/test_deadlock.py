"""Two transfers take the same two locks in opposite order: now and then each holds one and waits
for the other, forever."""

import asyncio
import random

import pytest

LOG: list = []


async def transfer(first: asyncio.Lock, second: asyncio.Lock, name: str, start: float) -> None:
    await asyncio.sleep(start)
    async with first:
        await asyncio.sleep(random.uniform(0, 0.002))  # the debit is written
        async with second:
            LOG.append(name)


@pytest.mark.asyncio
async def test_transfers_complete() -> None:
    LOG.clear()
    accounts, ledger = asyncio.Lock(), asyncio.Lock()
    await asyncio.gather(transfer(accounts, ledger, "a->b", 0), transfer(ledger, accounts, "b->a", 0.001))
    assert sorted(LOG) == ["a->b", "b->a"]
