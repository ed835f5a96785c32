"""Handlers acquire with a timeout; afterwards every connection is idle in the pool again."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "cancelled_handoff",
    "resource": ["Pool#0._queue", "Queue@"],
    "await": "c_asyncpg_acquire_timeout_leak_buggy.py:43",
    "fix": "HANDOFF_CLEANUP",
    "tags": ["cancellation", "handoff", "call_chain"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_asyncpg_acquire_timeout_leak_{request.param}")


@pytest.mark.asyncio
async def test_pool_gets_all_connections_back(lib) -> None:
    pool = lib.Pool(size=2)

    async def handler(i: int) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        try:
            conn = await pool.acquire(timeout=0.003)
        except asyncio.TimeoutError:
            return  # the handler answers 503
        try:
            await conn.fetch(f"select {i}")
        finally:
            pool.release(conn)

    await asyncio.gather(*(handler(i) for i in range(4)))
    assert pool.get_idle_size() == pool.get_size()
