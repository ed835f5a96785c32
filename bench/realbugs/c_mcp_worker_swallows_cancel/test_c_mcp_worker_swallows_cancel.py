"""Cancelling the worker task stops the worker, whatever it was doing."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "cancel_swallowed",
    "resource": ["Task@", "ServerWorker#0"],
    "await": "c_mcp_worker_swallows_cancel_buggy.py:32",
    "fix": None,
    "tags": ["cancellation", "background_task"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_mcp_worker_swallows_cancel_{request.param}")


@pytest.mark.asyncio
async def test_cancelled_worker_stops(lib) -> None:
    worker = lib.ServerWorker()

    async def client(i: int) -> None:
        await asyncio.sleep(random.uniform(0, 0.006))
        try:
            await worker.call(f"tool-{i}")
        except BaseException:
            pass  # a failed tool call is reported to the model, not raised

    clients = [asyncio.create_task(client(i)) for i in range(2)]
    try:
        await asyncio.sleep(random.uniform(0.001, 0.006))
        worker.task.cancel()
        done, _ = await asyncio.wait({worker.task}, timeout=0.1)
        assert worker.task in done, "the worker kept running after its task was cancelled"
        assert worker.task.cancelled()
    finally:
        worker.task.cancel()
        for task in clients:
            task.cancel()
        await asyncio.wait({worker.task, *clients}, timeout=0.05)
