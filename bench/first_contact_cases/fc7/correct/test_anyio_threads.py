"""anyio tests (asyncio backend): worker threads, from_thread calls, real elapsed time."""
import threading
import time

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"


def slow_square(x):
    time.sleep(0.05)
    return x * x


@pytest.mark.anyio
async def test_to_thread_run_sync():
    t0 = time.monotonic()
    assert await anyio.to_thread.run_sync(slow_square, 6) == 36
    assert time.monotonic() - t0 >= 0.049


@pytest.mark.anyio
async def test_parallel_threads_with_limiter():
    limiter = anyio.CapacityLimiter(3)
    results = {}

    async def run(i):
        results[i] = await anyio.to_thread.run_sync(slow_square, i, limiter=limiter)

    t0 = time.monotonic()
    async with anyio.create_task_group() as tg:
        for i in range(6):
            tg.start_soon(run, i)
    elapsed = time.monotonic() - t0
    assert results == {i: i * i for i in range(6)}
    assert 0.095 <= elapsed < 1.5  # two waves of three


@pytest.mark.anyio
async def test_thread_calls_back_into_loop():
    event = anyio.Event()

    def worker():
        time.sleep(0.02)
        anyio.from_thread.run_sync(event.set)
        return threading.get_ident()

    tid = await anyio.to_thread.run_sync(worker)
    assert event.is_set()
    assert tid != threading.get_ident()


@pytest.mark.anyio
async def test_fail_after_generous_and_move_on_after():
    with anyio.fail_after(5):
        await anyio.sleep(0.02)
    t0 = anyio.current_time()
    with anyio.move_on_after(0.05) as scope:
        await anyio.sleep(30)
    assert scope.cancelled_caught
    assert anyio.current_time() - t0 >= 0.049
    assert abs(anyio.current_time() - time.monotonic()) < 1.0
