"""run_blocking / WorkerPool: offloading with caps and timeouts."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from bridge import BlockingTimeout, BridgeClosed, Heartbeat, WorkerPool, run_blocking
from conftest import EPS, LONG, wait_until


@pytest.mark.asyncio
async def test_run_blocking_returns_result():
    assert await run_blocking(sum, [1, 2, 3], timeout=LONG) == 6


@pytest.mark.asyncio
async def test_run_blocking_timeout_has_lower_bound():
    release = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(BlockingTimeout) as info:
        await run_blocking(release.wait, LONG, timeout=0.05)
    assert time.monotonic() - t0 >= 0.05 - EPS
    assert isinstance(info.value, TimeoutError)
    release.set()


@pytest.mark.asyncio
async def test_pool_caps_concurrency(pool):
    results = await asyncio.wait_for(
        asyncio.gather(*(pool.run(time.sleep, 0.02) for _ in range(12))), LONG)
    assert results == [None] * 12
    assert 1 <= pool.peak_active <= 3
    assert pool.completed == 12 and pool.submitted == 12


@pytest.mark.asyncio
async def test_timed_out_job_keeps_its_slot_until_it_returns():
    pool = WorkerPool(max_workers=1, name="bridge-pool-slot")
    release = threading.Event()
    try:
        with pytest.raises(BlockingTimeout) as info:
            await pool.run(release.wait, LONG, timeout=0.05)
        assert info.value.still_running  # it is blocked on `release`
        assert pool.timed_out == 1
        second = asyncio.create_task(pool.run(lambda: "second"))
        # the only worker is still busy with the first job, so this must wait
        done, _ = await asyncio.wait({second}, timeout=0.05)
        assert not done
        release.set()
        assert await asyncio.wait_for(second, LONG) == "second"
    finally:
        release.set()
        await pool.aclose()


@pytest.mark.asyncio
async def test_map_keeps_input_order(pool):
    def slow_square(x):
        time.sleep(0.001 * (10 - x))  # later inputs finish first
        return x * x
    assert await asyncio.wait_for(pool.map(slow_square, range(10)), LONG) == \
        [x * x for x in range(10)]


@pytest.mark.asyncio
async def test_exception_from_thread_propagates(pool):
    def boom():
        raise KeyError("nope")
    with pytest.raises(KeyError):
        await pool.run(boom)
    assert await pool.run(lambda: 1) == 1


@pytest.mark.asyncio
async def test_aclose_waits_for_running_jobs_then_refuses():
    pool = WorkerPool(max_workers=2, name="bridge-pool-close")
    go = threading.Event()
    finished = []

    def job():
        go.wait(LONG)
        finished.append(1)

    task = asyncio.create_task(pool.run(job))
    await wait_until(lambda: pool.active == 1)  # stays 1 until `go` is set
    closing = asyncio.create_task(pool.aclose())
    done, _ = await asyncio.wait({closing}, timeout=0.05)
    assert not done  # the job is still blocked, so close must still be waiting
    go.set()
    await asyncio.wait_for(closing, LONG)
    assert finished == [1]
    await task
    with pytest.raises(BridgeClosed):
        await pool.run(job)


@pytest.mark.asyncio
async def test_loop_keeps_beating_while_a_thread_blocks(pool):
    release = threading.Event()
    async with Heartbeat(0.01) as hb:
        job = asyncio.create_task(pool.run(release.wait, LONG))
        await wait_until(lambda: pool.active == 1)
        start = len(hb.beats)
        await wait_until(lambda: len(hb.beats) >= start + 3)
        assert not job.done()  # the thread is still blocked, the loop is not
        release.set()
        assert await asyncio.wait_for(job, LONG) is True
