"""After the server drops the connection, the heartbeat and a tool call reconnect: nothing leaks."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "lost_update",
    "resource": "._connections",
    "await": "t_reconnect_leak_buggy.py:74",
    "fix": "LOCK_CALLER",
    "tags": ["check_then_act_across_functions"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"t_reconnect_leak_{request.param}")


@pytest.mark.asyncio
async def test_reconnect_after_drop_leaks_no_transport(lib):
    server = lib.FakeToolServer()
    manager = lib.ToolManager({"search": server})
    await manager.start("search")
    for transport in list(server.open_transports):
        transport.close()  # the server restarts and drops the stream

    async def heartbeat():
        await asyncio.sleep(random.uniform(0, 0.02))
        await manager.heartbeat("search")

    async def tool_call():
        await asyncio.sleep(random.uniform(0, 0.02))
        return await manager.call_tool("search", "lookup")

    await asyncio.gather(heartbeat(), tool_call())
    assert manager.is_connected("search")
    assert len(server.open_transports) == 1
