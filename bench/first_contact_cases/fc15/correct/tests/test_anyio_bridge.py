"""The same pieces driven through anyio's thread helpers."""

from __future__ import annotations

import threading
import time

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest

from bridge import BridgeQueue, ThreadSafeEvent, WorkerPool


@pytest.mark.anyio
async def test_anyio_thread_feeds_bridge_queue():
    q: BridgeQueue[int] = BridgeQueue()

    def produce():
        for i in range(50):
            q.put(i)
        q.close()

    async with anyio.create_task_group() as tg:
        tg.start_soon(anyio.to_thread.run_sync, produce)
        got = [i async for i in q]
    assert got == list(range(50))


@pytest.mark.anyio
async def test_from_thread_run_reaches_back_into_the_loop():
    calls = []

    async def record(x):
        await anyio.sleep(0)
        calls.append((x, threading.get_ident()))
        return x + 1

    def worker():
        return [anyio.from_thread.run(record, i) for i in range(5)]

    assert await anyio.to_thread.run_sync(worker) == [1, 2, 3, 4, 5]
    assert {ident for _, ident in calls} == {threading.get_ident()}


@pytest.mark.anyio
async def test_fail_after_around_pool_job():
    pool = WorkerPool(max_workers=1, name="bridge-pool-anyio")
    release = threading.Event()
    try:
        t0 = anyio.current_time()
        with pytest.raises(TimeoutError):
            with anyio.fail_after(0.05):
                await pool.run(release.wait, 20)
        assert anyio.current_time() - t0 >= 0.05 - 0.005
    finally:
        release.set()
        await pool.aclose()


@pytest.mark.anyio
async def test_threadsafe_event_in_task_group():
    ev = ThreadSafeEvent()
    woke = []

    async def waiter(i):
        await ev.wait()
        woke.append(i)

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(waiter, i)
        await anyio.to_thread.run_sync(time.sleep, 0.01)
        await anyio.to_thread.run_sync(ev.set)
    assert sorted(woke) == [0, 1, 2, 3]
