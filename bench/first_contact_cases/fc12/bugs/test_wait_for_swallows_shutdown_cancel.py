"""Model of https://github.com/python/cpython/issues/86296 (bpo-42130, "AsyncIO's wait_for can
hide cancellation in a rare race condition"), uses stock Python 3.11 asyncio.wait_for.

A queue worker polls `await asyncio.wait_for(queue.get(), 5)` in a loop. A producer puts one order
at 0.1 s; the shutdown routine wakes at 0.5 s, yields once (lets in-flight callbacks settle) and
cancels the worker. Under natural timing the worker has long finished the order and is waiting
again when the cancel arrives, so it stops.

Bad interleaving: the producer's wake-up and the shutdown's wake-up are processed in the same loop
iteration (the loop was busy from before 0.1 s to after 0.5 s). The put wakes the inner get task;
it finishes the get while the worker task has not resumed yet, and then the shutdown cancels the
worker. wait_for sees the CancelledError with an already-finished inner future and returns the
item, dropping the cancel: the worker keeps running after shutdown.
"""
import asyncio

import pytest


async def worker(queue, processed):
    while True:
        order = await asyncio.wait_for(queue.get(), 5)
        processed.append(order)


@pytest.mark.asyncio
async def test_worker_stops_on_shutdown():
    queue, processed = asyncio.Queue(), []
    task = asyncio.create_task(worker(queue, processed))

    async def producer():
        await asyncio.sleep(0.1)
        queue.put_nowait("order-1")

    async def shutdown():
        await asyncio.sleep(0.5)
        await asyncio.sleep(0)  # flush: let callbacks already scheduled run first
        task.cancel()

    try:
        await asyncio.gather(producer(), shutdown())
        done, _ = await asyncio.wait({task}, timeout=1.0)
        assert done, f"worker ignored the shutdown cancel (processed={processed})"
        assert task.cancelled()
        assert processed == ["order-1"]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
