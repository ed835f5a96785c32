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
        with pytest.raises(asyncio.CancelledError):
            await worker.task  # the manager's shutdown awaits the worker like this
        assert worker.task.cancelled()
    finally:
        for task in clients:
            task.cancel()
