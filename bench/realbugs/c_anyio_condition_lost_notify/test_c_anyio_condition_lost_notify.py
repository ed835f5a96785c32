"""A permanent and an elastic worker serve one job buffer; every job must be answered."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "lost_wakeup",
    "resource": ["Condition#0._waiters", "Event@", "Buffer#0._items"],
    "await": "c_anyio_condition_lost_notify_buggy.py:36",
    "fix": "HANDOFF_CLEANUP",
    "tags": ["cancellation", "handoff"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_anyio_condition_lost_notify_{request.param}")


@pytest.mark.asyncio
async def test_every_job_gets_an_answer(lib) -> None:
    buffer = lib.Buffer()
    loop = asyncio.get_running_loop()

    async def worker() -> None:
        while True:
            n, answer = await buffer.get()
            answer.set_result(n * n)
            await asyncio.sleep(random.uniform(0, 0.001))  # then records metrics

    async def helper() -> None:
        # An elastic worker: it scales itself down after 1 ms without a job.
        while True:
            try:
                n, answer = await asyncio.wait_for(buffer.get(), timeout=0.001)
            except asyncio.TimeoutError:
                return
            answer.set_result(n * n)

    async def client() -> list:
        helper_task = None
        results = []
        for n in range(2):
            if helper_task is None or helper_task.done():
                helper_task = asyncio.create_task(helper())  # scale up for the next job
            await asyncio.sleep(random.uniform(0, 0.0015))
            answer = loop.create_future()
            await buffer.put((n, answer))
            results.append(await answer)
        return results

    permanent = asyncio.create_task(worker())
    try:
        assert await client() == [n * n for n in range(2)]
    finally:
        permanent.cancel()
        await asyncio.wait({permanent}, timeout=0.05)
