import asyncio
import time

import pytest

from relay import Deadline, LagProbe, Stopwatch
from _helpers import EPS, ManualClock, wait_until


@pytest.mark.asyncio
async def test_stopwatch_lower_bounds_on_both_clocks():
    sw = Stopwatch(asyncio.get_running_loop())
    await asyncio.sleep(0.05)
    assert sw.elapsed() >= 0.05 - EPS
    assert sw.loop_elapsed() >= 0.05 - EPS


def test_stopwatch_without_loop():
    sw = Stopwatch()
    assert sw.elapsed() >= 0
    with pytest.raises(RuntimeError):
        sw.loop_elapsed()


def test_deadline_on_manual_clock():
    clock = ManualClock()
    d = Deadline(2.0, clock=clock)
    assert d.remaining() == 2.0 and not d.expired()
    clock.advance(1.5)
    assert d.remaining() == pytest.approx(0.5)
    clock.advance(1.0)
    assert d.remaining() == 0.0 and d.expired()
    assert Deadline(None, clock=clock).remaining() is None
    with pytest.raises(ValueError):
        Deadline(-1)


@pytest.mark.asyncio
async def test_lag_probe_sees_a_blocked_loop():
    probe = LagProbe(0.01)
    probe.start()
    try:
        await wait_until(lambda: len(probe.samples) >= 1)
        n = len(probe.samples)  # the probe is now suspended in its sleep
        time.sleep(0.1)
        await wait_until(lambda: len(probe.samples) > n)
        assert probe.max_lag >= 0.09 - EPS
    finally:
        await probe.stop()


@pytest.mark.asyncio
async def test_lag_probe_stays_small_when_work_is_offloaded():
    probe = LagProbe(0.005)
    probe.start()
    try:
        await asyncio.to_thread(time.sleep, 0.1)
        await wait_until(lambda: len(probe.samples) >= 2)
        assert probe.max_lag < 10.0
    finally:
        await probe.stop()
    await probe.stop()  # idempotent


@pytest.mark.asyncio
async def test_loop_time_tracks_monotonic():
    loop = asyncio.get_running_loop()
    assert abs(loop.time() - time.monotonic()) < 1.0
