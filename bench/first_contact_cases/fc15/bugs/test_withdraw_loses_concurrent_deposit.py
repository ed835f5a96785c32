"""Read-modify-write across an ``await`` loses a deposit made by a thread.

Modelled on randomphrase/harmonist#569 ("callers select the shared
connection before acquiring _LOCK ... A controlled in-memory reproduction
confirms a lost write when replacement occurs between connection selection
and execution"): a value is read outside the lock that another thread uses,
an await happens, and the stale value is written back.

``Wallet.withdraw`` reads ``balance``, awaits an audit-log write in a worker
thread, then stores ``balance - amount``.  A settlement thread credits
deposits under ``wallet.lock`` - which the coroutine never takes, and could
not hold across the await anyway.  A deposit landing during the audit write
is overwritten.
"""

import asyncio
import threading
import time

import pytest

START = 1000
WITHDRAWALS = 8
DEPOSITS = 2
DEPOSIT_GAP = 0.004
AUDIT_WRITE = 0.0005


class Wallet:
    def __init__(self, balance):
        self.balance = balance
        self.lock = threading.Lock()
        self.audit = []

    def _write_audit(self, entry):
        time.sleep(AUDIT_WRITE)            # fsync to the audit log
        self.audit.append(entry)

    def deposit(self, amount):              # settlement thread
        with self.lock:
            self.balance += amount

    async def withdraw(self, amount):
        current = self.balance              # read ...
        if current < amount:
            raise ValueError("insufficient funds")
        await asyncio.to_thread(self._write_audit, ("withdraw", amount, current))
        self.balance = current - amount     # ... write back a stale value


@pytest.mark.asyncio
async def test_balance_accounts_for_every_operation():
    wallet = Wallet(START)

    def settlement():
        for _ in range(DEPOSITS):
            time.sleep(DEPOSIT_GAP)
            wallet.deposit(100)

    t = threading.Thread(target=settlement, daemon=True)
    t.start()
    for _ in range(WITHDRAWALS):
        await wallet.withdraw(10)
        await asyncio.sleep(0.001)
    await asyncio.to_thread(t.join, 5)
    assert wallet.balance == START + DEPOSITS * 100 - WITHDRAWALS * 10
