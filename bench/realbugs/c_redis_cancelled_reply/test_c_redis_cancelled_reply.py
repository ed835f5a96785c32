"""A GET that timed out must not hand its reply to the next command."""

import asyncio
import importlib

import pytest

EXPECTED = {
    "cause": "cancelled_handoff",
    "resource": ["Connection#0._replies", "Queue@"],
    "await": "c_redis_cancelled_reply_buggy.py:60",
    "fix": "HANDOFF_CLEANUP",
    "tags": ["cancellation", "handoff", "call_chain"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_redis_cancelled_reply_{request.param}")


@pytest.mark.asyncio
async def test_reply_belongs_to_its_command(lib) -> None:
    client = lib.Redis(lib.FakeServer())
    await client.set("foo", "foo")
    await client.set("bar", "bar")
    try:
        await asyncio.wait_for(client.get("foo"), timeout=0.0038)
    except asyncio.TimeoutError:
        pass  # the page renders without the cached value
    assert await client.get("bar") == "bar"
