"""Sliding-window-log limiter tests; a module-loop class shares one limiter."""

import asyncio
import time

import pytest
import pytest_asyncio

from pacer import RateLimitExceeded, SlidingWindow

EPS = 0.010


def test_limit_per_window(manual_clock):
    win = SlidingWindow(limit=3, window=1.0, clock=manual_clock)
    for _ in range(3):
        win.try_acquire()
    with pytest.raises(RateLimitExceeded) as info:
        win.try_acquire()
    assert info.value.retry_after == pytest.approx(1.0)
    manual_clock.advance(0.5)
    with pytest.raises(RateLimitExceeded) as info:
        win.try_acquire()
    assert info.value.retry_after == pytest.approx(0.5)
    manual_clock.advance(0.5)
    win.try_acquire()
    assert win.in_window() == 1


def test_old_entries_leave_the_window(manual_clock):
    win = SlidingWindow(limit=2, window=10, clock=manual_clock)
    win.try_acquire()
    manual_clock.advance(4)
    win.try_acquire()
    assert win.in_window() == 2
    manual_clock.advance(6)
    assert win.in_window() == 1
    manual_clock.advance(4)
    assert win.in_window() == 0


@pytest.mark.asyncio
async def test_lower_bound_over_three_windows():
    win = SlidingWindow(limit=3, window=0.1)
    start = time.monotonic()
    for _ in range(7):
        await win.acquire()
    elapsed = time.monotonic() - start
    assert elapsed >= 0.2 - EPS
    assert elapsed < 5.0


@pytest.mark.asyncio
async def test_no_window_ever_holds_more_than_limit():
    loop = asyncio.get_running_loop()
    win = SlidingWindow(limit=2, window=0.05)
    times = []

    async def worker():
        await win.acquire()
        times.append(loop.time())

    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(8))), 10)
    times.sort()
    for a, b in zip(times, times[2:]):
        assert b - a >= 0.05 - EPS


@pytest.mark.asyncio
async def test_cancelled_waiter_is_not_logged(manual_clock):
    win = SlidingWindow(limit=1, window=1.0, clock=manual_clock)
    await win.acquire()
    waiter = asyncio.create_task(win.acquire())
    while manual_clock.sleeping == 0:
        await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    manual_clock.advance(1.0)
    win.try_acquire()
    assert win.admitted == 2


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_window():
    return {"limiter": SlidingWindow(limit=1000, window=60), "loop": asyncio.get_running_loop()}


@pytest.mark.asyncio(loop_scope="module")
class TestSharedWindow:
    async def test_runs_on_the_module_loop(self, shared_window):
        assert asyncio.get_running_loop() is shared_window["loop"]

    async def test_admissions_are_counted(self, shared_window):
        limiter = shared_window["limiter"]
        before = limiter.admitted
        for _ in range(5):
            await limiter.acquire()
        assert limiter.admitted == before + 5

    async def test_log_is_time_ordered(self, shared_window):
        limiter = shared_window["limiter"]
        await limiter.acquire()
        log = limiter.log
        assert log == sorted(log)
        assert len(log) <= limiter.limit
