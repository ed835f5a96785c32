"""loop.time() compared across awaits and against time.monotonic()."""
import asyncio
import time

import pytest


@pytest.mark.asyncio
async def test_loop_time_advances_by_at_least_the_sleep():
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await asyncio.sleep(0.05)
    assert loop.time() - t0 >= 0.05 - loop._clock_resolution - 0.001


@pytest.mark.asyncio
async def test_loop_time_is_monotonic_clock():
    loop = asyncio.get_running_loop()
    for _ in range(3):
        a = time.monotonic()
        lt = loop.time()
        b = time.monotonic()
        assert a - 0.001 <= lt <= b + 0.001
        await asyncio.sleep(0.01)


@pytest.mark.asyncio
async def test_call_at_fires_not_before_deadline():
    loop = asyncio.get_running_loop()
    fired_at = loop.create_future()
    when = loop.time() + 0.07
    loop.call_at(when, lambda: fired_at.set_result(loop.time()))
    t = await asyncio.wait_for(fired_at, 5)
    assert t >= when - loop._clock_resolution
    assert t - when < 2.0


@pytest.mark.asyncio
async def test_call_later_ordering_matches_delays():
    loop = asyncio.get_running_loop()
    seen = []
    done = loop.create_future()
    for d in (0.03, 0.01, 0.02):
        loop.call_later(d, seen.append, d)
    loop.call_later(0.05, done.set_result, None)
    await done
    assert seen == [0.01, 0.02, 0.03]


@pytest.mark.asyncio
async def test_blocking_work_advances_loop_time():
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    time.sleep(0.03)  # deliberately block the loop
    assert loop.time() - t0 >= 0.029
