"""A subscriber task is cancelled while messages arrive; cancelling it must stop it."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "cancel_swallowed",
    "resource": ["Task@", "Subscriber#0", "Queue@"],
    "await": "c_wait_for_swallows_cancel_buggy.py:24",
    "fix": None,
    "tags": ["cancellation"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_wait_for_swallows_cancel_{request.param}")


@pytest.mark.asyncio
async def test_cancelled_subscriber_stops(lib) -> None:
    subscriber = lib.Subscriber()
    task = asyncio.create_task(subscriber.run())

    async def publish() -> None:
        for message in range(2):
            await asyncio.sleep(random.uniform(0, 0.002))
            subscriber.inbox.put_nowait(message)

    async def shut_down() -> None:
        await asyncio.sleep(random.uniform(0.001, 0.02))
        task.cancel()

    try:
        await asyncio.gather(publish(), shut_down())
        done, _ = await asyncio.wait({task}, timeout=0.5)
        assert task in done, "the subscriber kept running after it was cancelled"
        assert task.cancelled()
    finally:
        task.cancel()
        await asyncio.wait({task}, timeout=0.05)
