"""Pacing under anyio (asyncio backend): fail_after, move_on_after, task groups, to_thread."""

import time

import anyio
import pytest

from pacer import Debouncer, TokenBucket

EPS = 0.010
pytestmark = pytest.mark.anyio


async def test_fail_after_lower_bound():
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        with anyio.fail_after(0.05):
            await anyio.sleep(10)
    assert time.monotonic() - start >= 0.05 - EPS


async def test_move_on_after_lower_bound():
    start = anyio.current_time()
    with anyio.move_on_after(0.05) as scope:
        await anyio.sleep(10)
    assert scope.cancelled_caught
    assert anyio.current_time() - start >= 0.05 - EPS


async def test_token_bucket_inside_a_task_group():
    bucket = TokenBucket(rate=50, capacity=1)
    admitted = []

    async def worker(i):
        await bucket.acquire()
        admitted.append(i)

    start = time.monotonic()
    async with anyio.create_task_group() as tg:
        for i in range(6):
            tg.start_soon(worker, i)
    assert sorted(admitted) == list(range(6))
    assert time.monotonic() - start >= 5 / 50 - EPS


async def test_to_thread_run_sync_blocking_sleep():
    start = time.perf_counter()
    result = await anyio.to_thread.run_sync(lambda: (time.sleep(0.05), "slept")[1])
    assert result == "slept"
    assert time.perf_counter() - start >= 0.05 - EPS


async def test_debouncer_flushed_from_a_task_group():
    calls = []
    deb = Debouncer(calls.append, wait=60)
    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(_trigger, deb, i)
    with anyio.fail_after(5):
        await deb.flush()
    assert len(calls) == 1 and calls[0] in (0, 1, 2)


async def _trigger(deb, i):
    deb.trigger(i)
