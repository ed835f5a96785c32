import asyncio
import threading
import time

import pytest

from relay import BlockingPool, CallTimeout, Closed, to_thread_with_timeout
from _helpers import EPS, EVENTUALLY, wait_until


@pytest.mark.asyncio
async def test_run_returns_result_from_pool_thread(pool):
    name = await pool.run(lambda: threading.current_thread().name)
    assert name.startswith("relay-pool")


@pytest.mark.asyncio
async def test_peak_never_exceeds_workers(pool):
    def job(i):
        time.sleep(0.002)
        return i

    out = await pool.map(job, range(12))
    assert out == list(range(12))
    assert 1 <= pool.peak <= 3
    assert pool.completed == 12 and pool.active == 0


@pytest.mark.asyncio
async def test_timeout_of_running_job(pool):
    gate = threading.Event()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(CallTimeout) as info:
        await pool.run(gate.wait, EVENTUALLY, timeout=0.05)
    assert loop.time() - t0 >= 0.05 - EPS
    assert isinstance(info.value, TimeoutError)
    assert pool.timed_out == 1
    gate.set()
    await wait_until(lambda: pool.active == 0)


@pytest.mark.asyncio
async def test_timeout_of_queued_job_cancels_it(pool):
    gate = threading.Event()
    ran = []
    blockers = [asyncio.ensure_future(pool.run(gate.wait, EVENTUALLY)) for _ in range(3)]
    await wait_until(lambda: pool.active == 3)  # stable: all workers blocked
    with pytest.raises(CallTimeout) as info:
        await pool.run(ran.append, 1, timeout=0.05)
    assert info.value.started is False
    gate.set()
    assert await asyncio.gather(*blockers) == [True, True, True]
    await pool.run(lambda: None)
    assert ran == []


@pytest.mark.asyncio
async def test_exception_crosses_threads(pool):
    def bad():
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        await pool.run(bad)
    assert await pool.run(lambda: "still works") == "still works"


@pytest.mark.asyncio
async def test_aclose_waits_for_running_job_then_refuses():
    p = BlockingPool(workers=1)
    gate = threading.Event()
    job = asyncio.ensure_future(p.run(gate.wait, EVENTUALLY))
    await wait_until(lambda: p.active == 1)
    closing = asyncio.ensure_future(p.aclose())
    await asyncio.sleep(0.05)
    assert not closing.done()  # nothing can finish the job but us
    gate.set()
    await asyncio.wait_for(closing, EVENTUALLY)
    assert await job is True
    with pytest.raises(Closed):
        await p.run(lambda: None)


@pytest.mark.asyncio
async def test_loop_keeps_running_while_workers_block(pool):
    gate = threading.Event()
    job = asyncio.ensure_future(pool.run(gate.wait, EVENTUALLY))
    ticks = 0
    for _ in range(5):
        await asyncio.sleep(0.001)
        ticks += 1
    assert ticks == 5 and not job.done()
    gate.set()
    assert await job is True


@pytest.mark.asyncio
async def test_to_thread_with_timeout():
    assert await to_thread_with_timeout(sum, [1, 2, 3], timeout=EVENTUALLY) == 6
    gate = threading.Event()
    with pytest.raises(asyncio.TimeoutError):
        await to_thread_with_timeout(gate.wait, EVENTUALLY, timeout=0.02)
    gate.set()
