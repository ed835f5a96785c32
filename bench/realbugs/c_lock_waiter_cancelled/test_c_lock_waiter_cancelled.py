"""Writers with a deadline and one without share a table lock; the one without must get its turn."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "cancelled_handoff",
    "resource": ["Lock#", "Table#0._lock", "Future@"],
    "await": "c_lock_waiter_cancelled_buggy.py:28",
    "fix": "HANDOFF_CLEANUP",
    "tags": ["cancellation", "handoff"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_lock_waiter_cancelled_{request.param}")


@pytest.mark.asyncio
async def test_writer_without_deadline_gets_the_lock(lib) -> None:
    table = lib.Table()

    async def request(i: int) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        try:
            await asyncio.wait_for(table.write(i), timeout=0.002)
        except asyncio.TimeoutError:
            pass  # the client gave up; its row is not needed

    async def audit() -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        await table.write("audit")

    await asyncio.gather(*(request(i) for i in range(6)), audit())
    assert "audit" in table.rows
