"""threading.Timer callbacks waking the event loop via call_soon_threadsafe."""
import asyncio
import threading
import time

import pytest


@pytest.mark.asyncio
async def test_timer_sets_asyncio_event():
    loop = asyncio.get_running_loop()
    ev = asyncio.Event()
    t0 = time.monotonic()
    timer = threading.Timer(0.08, lambda: loop.call_soon_threadsafe(ev.set))
    timer.start()
    await asyncio.wait_for(ev.wait(), timeout=5)
    assert time.monotonic() - t0 >= 0.075
    timer.join()


@pytest.mark.asyncio
async def test_timer_resolves_future_with_value():
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    timer = threading.Timer(0.03, lambda: loop.call_soon_threadsafe(fut.set_result, 42))
    timer.start()
    assert await asyncio.wait_for(fut, timeout=5) == 42
    timer.join()


@pytest.mark.asyncio
async def test_cancelled_timer_never_fires():
    loop = asyncio.get_running_loop()
    fired = threading.Event()
    timer = threading.Timer(0.05, fired.set)
    timer.start()
    timer.cancel()
    await asyncio.sleep(0.1)
    assert not fired.is_set()
    timer.join()
    assert loop.is_running()


@pytest.mark.asyncio
async def test_several_timers_fire_in_deadline_order():
    loop = asyncio.get_running_loop()
    order = []
    done = asyncio.Event()

    def make(tag):
        def cb():
            def record():
                order.append(tag)
                if len(order) == 3:
                    done.set()
            loop.call_soon_threadsafe(record)
        return cb

    timers = [threading.Timer(d, make(tag)) for tag, d in (("c", 0.15), ("a", 0.01), ("b", 0.08))]
    for t in timers:
        t.start()
    await asyncio.wait_for(done.wait(), timeout=5)
    assert order == ["a", "b", "c"]
    for t in timers:
        t.join()
