"""Soundness control: call_soon(deposit); call_soon(audit), and the audit must see the deposit.

asyncio runs ready callbacks first-in first-out, so the audit, scheduled after the deposit, always
runs after it: stock asyncio cannot fail this test. A scheduler that picks any ready handle can run
the audit first, and whatever it reports then is a false alarm.

Run as a pytest test (by affidavit) and, by bench/peers.py, as the bare coroutine
`test_audit_sees_deposit()` under simloop's and simloom's loops.
"""

import asyncio

import pytest


@pytest.mark.asyncio
async def test_audit_sees_deposit() -> None:
    loop = asyncio.get_running_loop()
    ledger = {"balance": 0}
    audited = loop.create_future()

    def deposit() -> None:
        ledger["balance"] += 10

    def audit() -> None:
        audited.set_result(ledger["balance"])

    loop.call_soon(deposit)
    loop.call_soon(audit)
    assert await audited == 10
