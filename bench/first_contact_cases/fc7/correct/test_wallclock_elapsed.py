"""Wall-clock readings around asyncio sleeps: real time must actually pass."""
import asyncio
import time

import pytest


@pytest.mark.asyncio
async def test_monotonic_lower_bound():
    t0 = time.monotonic()
    await asyncio.sleep(0.05)
    elapsed = time.monotonic() - t0
    assert elapsed >= 0.05 - 0.002
    assert elapsed < 2.0


@pytest.mark.asyncio
async def test_perf_counter_accumulates_over_several_sleeps():
    t0 = time.perf_counter()
    for _ in range(5):
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - t0
    assert elapsed >= 0.05 - 0.002
    assert elapsed < 2.0


@pytest.mark.asyncio
async def test_time_time_and_monotonic_agree():
    w0, m0 = time.time(), time.monotonic()
    await asyncio.sleep(0.04)
    dw, dm = time.time() - w0, time.monotonic() - m0
    assert dm >= 0.04 - 0.002
    # wall clock and monotonic clock advance together (no NTP step in 40ms)
    assert abs(dw - dm) < 0.25


@pytest.mark.asyncio
async def test_concurrent_sleeps_overlap_in_real_time():
    t0 = time.monotonic()
    await asyncio.gather(*(asyncio.sleep(0.05) for _ in range(10)))
    elapsed = time.monotonic() - t0
    # ten 50ms sleeps run concurrently: >= 50ms, but nowhere near 500ms
    assert 0.048 <= elapsed < 0.4


@pytest.mark.asyncio
async def test_sleep_zero_is_fast():
    t0 = time.perf_counter()
    for _ in range(100):
        await asyncio.sleep(0)
    assert time.perf_counter() - t0 < 1.0
