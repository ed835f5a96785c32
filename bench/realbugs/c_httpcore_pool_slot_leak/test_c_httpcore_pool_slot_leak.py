"""After a burst of requests that time out, the pool still serves requests."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "cancelled_handoff",
    "resource": ["ConnectionPool#0._connections", "Connection#"],
    "await": "c_httpcore_pool_slot_leak_buggy.py:72",
    "fix": "HANDOFF_CLEANUP",
    "tags": ["cancellation", "handoff"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_httpcore_pool_slot_leak_{request.param}")


@pytest.mark.asyncio
async def test_pool_serves_after_timeouts(lib) -> None:
    pool = lib.ConnectionPool(max_connections=1)

    async def client(i: int) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        try:
            await asyncio.wait_for(pool.request(f"/item/{i}"), timeout=0.004)
        except asyncio.TimeoutError:
            pass  # the client retries later

    await asyncio.gather(*(client(i) for i in range(3)))
    assert await pool.request("/health") == "200 /health"
