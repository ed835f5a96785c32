"""Requests with a deadline use a checked pool; afterwards every connection is available again."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "cancelled_handoff",
    "resource": ["AsyncConnectionPool#0._pool", "Queue@"],
    "await": "c_psycopg_check_cancel_leak_buggy.py:43",
    "fix": "HANDOFF_CLEANUP",
    "tags": ["cancellation", "handoff", "call_chain"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_psycopg_check_cancel_leak_{request.param}")


@pytest.mark.asyncio
async def test_pool_has_all_connections_back(lib) -> None:
    pool = lib.AsyncConnectionPool(size=2)

    async def view(i: int) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        async with pool.connection() as conn:
            await conn.execute(f"select * from page where id = {i}")

    async def request(i: int) -> None:
        try:
            await asyncio.wait_for(view(i), timeout=0.006)
        except asyncio.TimeoutError:
            pass  # the request answers 504

    await asyncio.gather(*(request(i) for i in range(4)))
    stats = pool.get_stats()
    assert stats["pool_available"] == stats["pool_size"]
