"""After a request returns, even with a 504, its connection is back in the pool."""

import asyncio
import importlib

import pytest

EXPECTED = {
    "cause": "cancel_ordering",
    "resource": "Pool#0.idle",
    "await": "c_wait_for_cleanup_order_buggy.py:24",
    "fix": "AWAIT_TASK",
    "tags": ["cancellation", "call_chain"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_wait_for_cleanup_order_{request.param}")


@pytest.mark.asyncio
async def test_connection_returned_after_each_request(lib) -> None:
    pool = lib.Pool(size=2)
    for sql in ("select 1", "select 2", "select 3"):
        await lib.handle(pool, sql)
        assert len(pool.idle) == 2, f"{2 - len(pool.idle)} connection(s) still out after {sql!r}"
