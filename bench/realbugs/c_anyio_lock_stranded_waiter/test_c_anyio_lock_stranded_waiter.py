"""Exports with a deadline and one without share a lock; the one without must get its turn."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "lost_wakeup",
    "resource": ["Lock#", "Exporter#0._lock", "Future@"],
    "await": "c_anyio_lock_stranded_waiter_buggy.py:26",
    "fix": "HANDOFF_AT_WAKEUP",
    "tags": ["cancellation", "handoff"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_anyio_lock_stranded_waiter_{request.param}")


@pytest.mark.asyncio
async def test_final_export_runs(lib) -> None:
    exporter = lib.Exporter()

    async def periodic(i: int) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        try:
            await asyncio.wait_for(exporter.export(f"metrics-{i}"), timeout=0.002)
        except asyncio.TimeoutError:
            pass  # skipped; the next period exports again

    async def final() -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        await exporter.export("final")

    await asyncio.gather(final(), *(periodic(i) for i in range(6)))
    assert "final" in exporter.exported
