"""TaskGroup teardown: a failing sibling cancels a transfer between its debit and its credit.

The validator rejects the batch after 1 ms; the TaskGroup then cancels the transfer. When the
transfer's journal write is still in flight, the debit has happened and the credit never will:
money disappears from the ledger.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "order_violation", "resource": "Ledger#0.accounts"}


class Ledger:
    def __init__(self) -> None:
        self.accounts = {"alice": 100, "bob": 0}

    async def transfer(self, source: str, target: str, amount: int) -> None:
        self.accounts[source] -= amount
        await asyncio.sleep(random.uniform(0, 0.002))  # the journal entry is written
        self.accounts[target] += amount


async def validate_batch() -> None:
    await asyncio.sleep(0.001)
    raise ValueError("batch rejected by the fraud check")


@pytest.mark.asyncio
async def test_rejected_batch_keeps_money() -> None:
    ledger = Ledger()
    with pytest.raises(ExceptionGroup):
        async with asyncio.TaskGroup() as group:
            group.create_task(ledger.transfer("alice", "bob", 30))
            group.create_task(validate_batch())
    assert sum(ledger.accounts.values()) == 100, ledger.accounts
