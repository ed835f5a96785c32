"""Real threads doing blocking time.sleep while the coroutine awaits them."""
import asyncio
import concurrent.futures
import threading
import time

import pytest


def blocking_work(n, delay):
    time.sleep(delay)
    return n * n, threading.get_ident()


@pytest.mark.asyncio
async def test_run_in_executor_default_pool():
    loop = asyncio.get_running_loop()
    t0 = time.monotonic()
    value, tid = await loop.run_in_executor(None, blocking_work, 7, 0.1)
    assert value == 49
    assert tid != threading.get_ident()
    assert time.monotonic() - t0 >= 0.095


@pytest.mark.asyncio
async def test_to_thread_runs_concurrently_with_loop():
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    t = asyncio.create_task(ticker())
    value, _ = await asyncio.to_thread(blocking_work, 3, 0.15)
    t.cancel()
    assert value == 9
    # the loop kept running while the thread slept
    assert ticks >= 3


@pytest.mark.asyncio
async def test_explicit_pool_parallelism():
    loop = asyncio.get_running_loop()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        t0 = time.monotonic()
        results = await asyncio.gather(
            *(loop.run_in_executor(pool, blocking_work, i, 0.1) for i in range(4))
        )
        elapsed = time.monotonic() - t0
    assert [r[0] for r in results] == [0, 1, 4, 9]
    assert len({r[1] for r in results}) >= 2
    assert 0.095 <= elapsed < 0.35


@pytest.mark.asyncio
async def test_thread_object_joined_via_executor():
    box = []
    th = threading.Thread(target=lambda: (time.sleep(0.05), box.append("done")))
    th.start()
    await asyncio.to_thread(th.join)
    assert box == ["done"]
