"""Concurrent first enqueues build the queue's indexes once and enqueue every task."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "check_then_act",
    "resource": "TaskQueue#0._initialized",
    "await": ["t_queue_double_init_buggy.py:34", "t_queue_double_init_buggy.py:35"],
    "fix": "RECHECK",
    "tags": ["lazy_init"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"t_queue_double_init_{request.param}")


@pytest.mark.asyncio
async def test_concurrent_enqueue_initialises_once(lib):
    store = lib.FakeDocumentStore()
    queue = lib.TaskQueue(store)

    async def submit(n):
        await asyncio.sleep(random.uniform(0, 0.04))  # requests reach the API at different times
        await queue.enqueue("scan", {"target": n})

    await asyncio.gather(*(submit(n) for n in range(3)))
    assert sorted(d["payload"]["target"] for _, d in store.documents) == [0, 1, 2]
    assert len(store.index_builds) == 2
