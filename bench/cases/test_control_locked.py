"""Control (race-free): the read-await-write of the balance is held under one asyncio.Lock.

The same shape as a lost update, but every deposit holds the account's lock from the read to the
write, so no interleaving can lose one. Nothing may be reported.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "no_failure", "cause": None}


class Account:
    def __init__(self) -> None:
        self.balance = 0
        self.lock = asyncio.Lock()

    async def deposit(self, amount: int) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        async with self.lock:
            current = self.balance
            await asyncio.sleep(0.0005)  # the ledger write
            self.balance = current + amount


@pytest.mark.asyncio
async def test_locked_deposits() -> None:
    account = Account()
    await asyncio.gather(account.deposit(10), account.deposit(20), account.deposit(30))
    assert account.balance == 60
