"""Heartbeat and LagMonitor, measured with time.monotonic()."""

from __future__ import annotations

import asyncio
import time

import pytest

from bridge import Heartbeat, LagMonitor
from conftest import wait_until


@pytest.mark.asyncio
async def test_gaps_are_never_shorter_than_the_interval():
    async with Heartbeat(0.02) as hb:
        await wait_until(lambda: len(hb.beats) >= 5)
    gaps = [b - a for a, b in zip(hb.beats, hb.beats[1:])]
    assert min(gaps) >= 0.02 - 0.001


@pytest.mark.asyncio
async def test_failing_beat_is_recorded_and_beats_continue():
    def on_beat(n):
        if n == 1:
            raise RuntimeError("backend down")

    async with Heartbeat(0.005, on_beat) as hb:
        await wait_until(lambda: len(hb.beats) >= 4)
    assert [str(e) for e in hb.errors] == ["backend down"]


@pytest.mark.asyncio
async def test_async_beat_callbacks_are_awaited():
    seen = []

    async def on_beat(n):
        await asyncio.sleep(0)
        seen.append(n)

    async with Heartbeat(0.005, on_beat) as hb:
        await wait_until(lambda: len(seen) >= 3)
    assert seen[:3] == [0, 1, 2]
    assert not hb.running


@pytest.mark.asyncio
async def test_start_twice_refused_and_stop_idempotent():
    hb = Heartbeat(0.01)
    hb.start()
    with pytest.raises(RuntimeError):
        hb.start()
    await hb.stop()
    await hb.stop()
    with pytest.raises(ValueError):
        Heartbeat(0)


@pytest.mark.asyncio
async def test_blocking_sleep_on_loop_creates_a_gap():
    async with Heartbeat(0.01) as hb:
        await wait_until(lambda: len(hb.beats) >= 1)
        time.sleep(0.2)  # the classic mistake
        n = len(hb.beats)
        await wait_until(lambda: len(hb.beats) > n)
    assert hb.max_gap >= 0.2


@pytest.mark.asyncio
async def test_lag_monitor_sees_a_blocked_loop():
    mon = LagMonitor(interval=0.01)
    mon.start()
    await asyncio.sleep(0)  # the monitor is now inside its sleep
    time.sleep(0.1)
    await wait_until(lambda: len(mon.samples) >= 1)
    await mon.stop()
    assert mon.worst >= 0.1 - 0.01 - 0.005


@pytest.mark.asyncio
async def test_lag_monitor_quiet_when_work_is_offloaded():
    mon = LagMonitor(interval=0.01)
    mon.start()
    await asyncio.to_thread(time.sleep, 0.1)
    await wait_until(lambda: len(mon.samples) >= 3)
    await mon.stop()
    assert mon.worst < 10.0  # generous: only a blocked loop would get near it
