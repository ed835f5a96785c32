"""Blocking time.sleep inside coroutines delays other tasks by real time."""
import asyncio
import time

import pytest


@pytest.mark.asyncio
async def test_blocking_sleep_delays_timer_of_other_task():
    loop = asyncio.get_running_loop()
    woke_at = loop.create_future()

    async def short_sleeper():
        t0 = time.monotonic()
        await asyncio.sleep(0.01)
        woke_at.set_result(time.monotonic() - t0)

    t = asyncio.create_task(short_sleeper())
    await asyncio.sleep(0)  # let it start its 10ms sleep
    time.sleep(0.08)  # block the loop for 80ms
    delay = await asyncio.wait_for(woke_at, 5)
    await t
    assert delay >= 0.075  # could not wake before the loop was unblocked


@pytest.mark.asyncio
async def test_cpu_bound_slice_then_yield():
    order = []

    async def spinner(tag, seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            pass
        order.append(tag)
        await asyncio.sleep(0)
        order.append(tag + "-after")

    await asyncio.gather(spinner("a", 0.02), spinner("b", 0.01))
    assert order == ["a", "b", "a-after", "b-after"]


@pytest.mark.asyncio
async def test_thread_queue_bridge_producer_uses_time_sleep():
    import threading

    loop = asyncio.get_running_loop()
    q = asyncio.Queue()

    def producer():
        for i in range(5):
            time.sleep(0.01)
            loop.call_soon_threadsafe(q.put_nowait, i)
        loop.call_soon_threadsafe(q.put_nowait, None)

    th = threading.Thread(target=producer)
    t0 = time.monotonic()
    th.start()
    items = []
    while (item := await asyncio.wait_for(q.get(), 5)) is not None:
        items.append(item)
    th.join()
    assert items == [0, 1, 2, 3, 4]
    assert time.monotonic() - t0 >= 0.045
