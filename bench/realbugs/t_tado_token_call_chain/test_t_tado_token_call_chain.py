"""An automation turns a room off while the coordinator polls, right at the token's expiry."""

import asyncio
import importlib
import random
import time

import pytest

EXPECTED = {
    "cause": "check_then_act",
    "resource": ["._token_expiry", "._refresh_token"],
    "await": "t_tado_token_call_chain_buggy.py:62",
    "fix": "RECHECK",
    "tags": ["check_then_act_across_functions", "call_chain"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"t_tado_token_call_chain_{request.param}")


@pytest.mark.asyncio
async def test_turn_off_during_poll_near_expiry(lib):
    cloud = lib.FakeCloud()
    api = lib.TadoXApi(cloud, token_expiry=time.time() + 30)  # inside the 60 s refresh window
    coordinator = lib.Coordinator(api)
    switch = lib.RoomSwitch(coordinator, "living")

    async def scheduled_poll():
        await asyncio.sleep(random.uniform(0, 0.02))
        await coordinator.async_refresh()

    async def automation():
        await asyncio.sleep(random.uniform(0, 0.02))
        await switch.async_turn_off()

    await asyncio.gather(scheduled_poll(), automation())
    assert cloud.rooms["living"] == "off"
    assert coordinator.data["living"] == "off"
