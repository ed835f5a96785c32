"""Requests with a short timeout and one without share a connection limit of one."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "lost_wakeup",
    "resource": ["Connector#0._waiters", "Future@"],
    "await": "c_aiohttp_connector_limit_buggy.py:24",
    "fix": "HANDOFF_CLEANUP",
    "tags": ["cancellation", "handoff"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_aiohttp_connector_limit_{request.param}")


@pytest.mark.asyncio
async def test_request_without_timeout_completes(lib) -> None:
    session = lib.Session(limit=1)

    async def hasty(i: int) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        try:
            await asyncio.wait_for(session.get(f"/poll/{i}"), timeout=0.002)
        except asyncio.TimeoutError:
            pass  # the poller tries again on its next tick

    async def upload() -> str:
        await asyncio.sleep(random.uniform(0, 0.002))
        return await session.get("/upload")

    results = await asyncio.gather(upload(), *(hasty(i) for i in range(6)))
    assert results[0] == "200 /upload"
