"""The first data change of a new subscription reaches its handler."""

import asyncio
import importlib

import pytest

EXPECTED = {
    "cause": "order_violation",
    "resource": "._subscriptions",
    "await": "t_publish_before_registered_buggy.py:60",
    "fix": None,
    "tags": ["handoff"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"t_publish_before_registered_{request.param}")


@pytest.mark.asyncio
async def test_first_data_change_is_delivered(lib):
    client = lib.Client(lib.FakeServer())
    first_value = asyncio.get_running_loop().create_future()

    def on_data_change(data):
        if not first_value.done():
            first_value.set_result(data["value"])

    subscription = await client.create_subscription(["ns=2;i=7"], on_data_change)
    assert subscription.items == ["1:ns=2;i=7"]
    assert await asyncio.wait_for(first_value, timeout=0.2) == 42
