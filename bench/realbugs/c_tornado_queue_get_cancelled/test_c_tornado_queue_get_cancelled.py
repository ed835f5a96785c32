"""A consumer polls a queue with a timeout; no event put on the queue may be lost."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "cancelled_handoff",
    "resource": ["Queue#0._getters", "Queue#0._items", "Future@"],
    "await": "c_tornado_queue_get_cancelled_buggy.py:34",
    "fix": "HANDOFF_CLEANUP",
    "tags": ["cancellation", "handoff"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_tornado_queue_get_cancelled_{request.param}")


@pytest.mark.asyncio
async def test_no_event_is_lost(lib) -> None:
    queue = lib.Queue()
    done = asyncio.Event()
    received: list = []

    async def produce() -> None:
        for event in range(2):
            await asyncio.sleep(random.uniform(0, 0.010))  # events arrive from the network
            queue.put_nowait(event)
        done.set()

    async def consume() -> None:
        while not (done.is_set() and queue.qsize() == 0):
            try:
                received.append(await asyncio.wait_for(queue.get(), timeout=0.008))
            except asyncio.TimeoutError:
                pass  # idle: check for shutdown, then wait again

    await asyncio.gather(produce(), consume())
    assert received == [0, 1]
