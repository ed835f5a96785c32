"""Debouncer tests."""

import asyncio

import pytest

from pacer import Debouncer

EPS = 0.010
pytestmark = pytest.mark.asyncio


async def test_burst_fires_once_with_last_arguments():
    loop = asyncio.get_running_loop()
    calls = []
    deb = Debouncer(calls.append, wait=0.05)
    deb.trigger(1)
    deb.trigger(2)
    deb.trigger(3)
    last = loop.time()
    await asyncio.wait_for(deb.wait_idle(), 5)
    assert calls == [3]
    assert deb.triggered == 3
    assert deb.fired_at[0] - last >= 0.05 - EPS


async def test_fires_after_the_last_trigger():
    loop = asyncio.get_running_loop()
    calls = []
    deb = Debouncer(calls.append, wait=0.05)
    deb.trigger("a")
    await asyncio.sleep(0.02)
    deb.trigger("b")
    t_b = loop.time()
    await asyncio.wait_for(deb.wait_idle(), 5)
    # normally one call; if the loop stalled longer than the wait, "a" fired on its own first
    assert calls in (["b"], ["a", "b"])
    assert deb.fired_at[-1] - t_b >= 0.05 - EPS


async def test_async_target_runs_are_serialized():
    active = 0
    peak = 0
    seen = []

    async def target(x):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        seen.append(x)
        active -= 1

    deb = Debouncer(target, wait=0.01)
    deb.trigger(1)
    await deb.flush()
    deb.trigger(2)
    deb.trigger(3)
    await asyncio.wait_for(deb.flush(), 5)
    assert seen == [1, 3]
    assert peak == 1


async def test_cancel_drops_the_pending_call():
    calls = []
    deb = Debouncer(calls.append, wait=0.02)
    deb.trigger(1)
    deb.cancel()
    await asyncio.sleep(0.06)
    assert calls == []
    assert deb.fired_at == []


async def test_max_wait_bounds_a_continuous_stream():
    loop = asyncio.get_running_loop()
    fired = asyncio.Event()
    got = []

    def target(x):
        got.append(x)
        fired.set()

    deb = Debouncer(target, wait=30, max_wait=0.05)
    t0 = loop.time()
    deb.trigger(0)

    async def stream():
        for i in range(1, 1000):
            await asyncio.sleep(0.01)
            deb.trigger(i)

    feeder = asyncio.create_task(stream())
    try:
        await asyncio.wait_for(fired.wait(), 5)
    finally:
        feeder.cancel()
        await asyncio.gather(feeder, return_exceptions=True)
        deb.cancel()
    assert deb.fired_at[0] - t0 >= 0.05 - EPS
    assert got[0] >= 0

