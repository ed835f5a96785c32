"""The same opposite lock order, but the test gives up after 50 ms: it fails with a timeout when
the transfers deadlock. The lock-order graph has a cycle whether or not a run deadlocked."""

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
async def test_transfers_within_deadline() -> None:
    LOG.clear()
    accounts, ledger = asyncio.Lock(), asyncio.Lock()
    both = asyncio.gather(transfer(accounts, ledger, "a->b", 0), transfer(ledger, accounts, "b->a", 0.001))
    await asyncio.wait_for(both, timeout=0.05)
    assert sorted(LOG) == ["a->b", "b->a"]
