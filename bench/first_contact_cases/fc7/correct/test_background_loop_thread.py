"""A second event loop running in a background thread, driven with run_coroutine_threadsafe."""
import asyncio
import threading
import time

import pytest


@pytest.fixture
def bg_loop():
    loop = asyncio.new_event_loop()
    th = threading.Thread(target=loop.run_forever, daemon=True)
    th.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    th.join(5)
    loop.close()


async def remote_work(x):
    await asyncio.sleep(0.05)
    return x + 1, threading.get_ident()


@pytest.mark.asyncio
async def test_wrap_future_from_other_loop(bg_loop):
    cf = asyncio.run_coroutine_threadsafe(remote_work(1), bg_loop)
    value, tid = await asyncio.wait_for(asyncio.wrap_future(cf), timeout=5)
    assert value == 2
    assert tid != threading.get_ident()


@pytest.mark.asyncio
async def test_blocking_result_in_executor(bg_loop):
    cf = asyncio.run_coroutine_threadsafe(remote_work(10), bg_loop)
    value, _ = await asyncio.to_thread(cf.result, 5)
    assert value == 11


@pytest.mark.asyncio
async def test_ping_pong_between_loops(bg_loop):
    here = asyncio.get_running_loop()
    got = asyncio.Queue()

    async def remote_echo(n):
        await asyncio.sleep(0.005)
        here.call_soon_threadsafe(got.put_nowait, n * 2)

    for i in range(5):
        asyncio.run_coroutine_threadsafe(remote_echo(i), bg_loop)
    results = sorted([await asyncio.wait_for(got.get(), 5) for _ in range(5)])
    assert results == [0, 2, 4, 6, 8]


@pytest.mark.asyncio
async def test_remote_loop_time_is_independent(bg_loop):
    async def remote_time():
        return asyncio.get_running_loop().time()

    t_here = asyncio.get_running_loop().time()
    cf = asyncio.run_coroutine_threadsafe(remote_time(), bg_loop)
    t_there = await asyncio.wrap_future(cf)
    # both loops use time.monotonic(), so readings are close
    assert abs(t_there - t_here) < 1.0
    assert abs(t_there - time.monotonic()) < 1.0
