"""A deposit that reads the balance through a helper and writes it back after an await: two
deposits both read the old balance, and one of them is lost."""

import asyncio
import random

import pytest


class Account:
    def __init__(self) -> None:
        self.balance = 0

    def _current(self) -> int:
        return self.balance

    async def deposit(self, amount: int) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))  # the request arrives after some latency
        current = self._current()
        await asyncio.sleep(random.uniform(0, 0.001))  # the ledger is consulted
        self.balance = current + amount


@pytest.mark.asyncio
async def test_deposits_add_up() -> None:
    account = Account()
    await asyncio.gather(account.deposit(1), account.deposit(2))
    assert account.balance == 3
