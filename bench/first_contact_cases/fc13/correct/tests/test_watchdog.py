"""Heartbeat watchdog tests."""

import asyncio
import time

import pytest

from pacer import Watchdog, stats

EPS = 0.010


@pytest.mark.asyncio
async def test_fires_after_the_timeout_without_beats():
    start = time.monotonic()
    wd = Watchdog(0.05).start()
    t0 = wd.last_beat
    try:
        await asyncio.wait_for(wd.fired.wait(), 5)
    finally:
        await wd.stop()
    assert wd.fired_at[0] - t0 >= 0.05 - EPS
    assert time.monotonic() - start >= 0.05 - EPS
    assert stats.get("watchdog.fired") == 1


@pytest.mark.asyncio
async def test_fire_is_at_least_timeout_after_the_preceding_beat():
    loop = asyncio.get_running_loop()
    wd = Watchdog(0.05).start()
    beats = [wd.last_beat]
    try:
        for _ in range(3):
            await asyncio.sleep(0.01)
            wd.beat()
            beats.append(loop.time())
        await asyncio.wait_for(wd.fired.wait(), 5)
    finally:
        await wd.stop()
    fired = wd.fired_at[0]
    preceding = max(b for b in beats if b <= fired)
    assert fired - preceding >= 0.05 - EPS


@pytest.mark.asyncio
async def test_regular_beats_keep_it_quiet():
    wd = Watchdog(10.0).start()
    try:
        for _ in range(10):
            await asyncio.sleep(0.005)
            wd.beat()
        assert wd.deadline == pytest.approx(wd.last_beat + 10.0)
    finally:
        await wd.stop()
    assert not wd.fired.is_set()
    assert wd.beats == 10


@pytest.mark.asyncio
async def test_async_callback_gets_the_silence_duration():
    got = []
    done = asyncio.Event()

    async def on_timeout(silence):
        await asyncio.sleep(0)
        got.append(silence)
        done.set()

    wd = Watchdog(0.03, on_timeout).start()
    try:
        await asyncio.wait_for(done.wait(), 5)
    finally:
        await wd.stop()
    assert got[0] >= 0.03 - EPS


@pytest.mark.asyncio
async def test_rearmed_watchdog_fires_repeatedly_with_full_periods():
    three = asyncio.Event()

    def on_timeout(_):
        if len(wd.fired_at) >= 3:
            three.set()

    wd = Watchdog(0.03, on_timeout, rearm=True).start()
    try:
        await asyncio.wait_for(three.wait(), 5)
    finally:
        await wd.stop()
    for a, b in zip(wd.fired_at, wd.fired_at[1:]):
        assert b - a >= 0.03 - EPS


@pytest.mark.asyncio
async def test_stopped_before_the_timeout_never_fires():
    wd = Watchdog(10.0).start()
    await asyncio.sleep(0)
    await wd.stop()
    assert not wd.fired.is_set()
    assert wd.fired_at == []


@pytest.mark.asyncio
async def test_context_manager_and_warning_log(caplog):
    async with Watchdog(0.02, name="db-link") as wd:
        await asyncio.wait_for(wd.fired.wait(), 5)
    assert "db-link: no beat for" in caplog.text

