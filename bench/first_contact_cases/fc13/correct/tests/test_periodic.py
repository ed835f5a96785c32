"""Periodic runner tests: fixed rate with drift correction, fixed delay, overruns, errors."""

import asyncio
import time

import pytest

from pacer import PeriodicTask, stats

EPS = 0.010
pytestmark = pytest.mark.asyncio


async def test_fixed_rate_ticks_stay_on_the_grid():
    runner = PeriodicTask(lambda: None, 0.02, max_ticks=5).start()
    await asyncio.wait_for(runner.join(), 5)
    t0 = runner.started_at
    indexes = [t.index for t in runner.ticks]
    assert indexes == sorted(set(indexes)) and len(indexes) == 5
    for tick in runner.ticks:
        assert tick.started >= t0 + tick.index * 0.02 - EPS
        assert tick.started >= tick.scheduled - EPS


async def test_fixed_rate_total_time_lower_bound():
    start = time.monotonic()
    runner = PeriodicTask(lambda: None, 0.03, max_ticks=6).start()
    await asyncio.wait_for(runner.join(), 5)
    assert time.monotonic() - start >= 5 * 0.03 - EPS


async def test_overrunning_ticks_skip_slots_and_never_overlap():
    async def slow():
        await asyncio.sleep(0.05)

    runner = PeriodicTask(slow, 0.02, max_ticks=4).start()
    await asyncio.wait_for(runner.join(), 5)
    assert runner.max_running == 1
    ticks = runner.ticks
    for prev, nxt in zip(ticks, ticks[1:]):
        assert nxt.index >= prev.index + 2  # a 0.05 s tick covers at least 2 slots of 0.02 s
        assert nxt.started >= prev.ended
        assert nxt.started >= runner.started_at + nxt.index * 0.02 - EPS


async def test_without_skipping_missed_slots_run_back_to_back():
    async def slow():
        await asyncio.sleep(0.03)

    runner = PeriodicTask(slow, 0.01, max_ticks=4, skip_missed=False).start()
    await asyncio.wait_for(runner.join(), 5)
    assert [t.index for t in runner.ticks] == [0, 1, 2, 3]
    assert runner.max_running == 1


async def test_fixed_delay_gap_is_measured_from_the_end():
    async def work():
        await asyncio.sleep(0.01)

    runner = PeriodicTask(work, 0.03, mode="fixed_delay", max_ticks=4).start()
    await asyncio.wait_for(runner.join(), 5)
    for prev, nxt in zip(runner.ticks, runner.ticks[1:]):
        assert nxt.started - prev.ended >= 0.03 - EPS


async def test_errors_are_logged_and_the_loop_continues(caplog):
    count = 0

    def flaky():
        nonlocal count
        count += 1
        if count == 2:
            raise RuntimeError("tick failed")

    runner = PeriodicTask(flaky, 0.01, max_ticks=3, name="flaky").start()
    await asyncio.wait_for(runner.join(), 5)
    assert [t.error is not None for t in runner.ticks] == [False, True, False]
    assert stats.get("periodic.errors") == 1
    # the failing tick's slot number depends on how punctual the loop was; read it back
    assert f"flaky tick {runner.ticks[1].index} failed" in caplog.text


async def test_stop_on_error_ends_the_runner():
    def boom():
        raise RuntimeError("nope")

    runner = PeriodicTask(boom, 0.01, stop_on_error=True).start()
    await asyncio.wait_for(runner.join(), 5)
    assert len(runner.ticks) == 1
    assert not runner.running


async def test_stop_cancels_a_running_tick():
    entered = asyncio.Event()
    cleaned = []

    async def hang():
        entered.set()
        try:
            await asyncio.sleep(3600)
        finally:
            cleaned.append(True)

    runner = PeriodicTask(hang, 0.01).start()
    await asyncio.wait_for(entered.wait(), 5)
    await runner.stop()
    assert cleaned == [True]
    assert not runner.running


async def test_wait_ticks_and_context_manager_with_initial_delay():
    loop = asyncio.get_running_loop()
    created = loop.time()
    async with PeriodicTask(lambda: None, 0.01, initial_delay=0.05) as runner:
        first_three = await asyncio.wait_for(runner.wait_ticks(3), 5)
    assert len(first_three) == 3
    assert first_three[0].started - created >= 0.05 - EPS
    assert not runner.running

