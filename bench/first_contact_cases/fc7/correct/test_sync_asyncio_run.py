"""Plain synchronous tests that create and run their own event loops."""
import asyncio
import time

import pytest


async def compute(n):
    await asyncio.sleep(0.01)
    return sum(range(n))


def test_asyncio_run_simple():
    assert asyncio.run(compute(10)) == 45


def test_asyncio_run_twice_gets_distinct_loops():
    async def current_loop():
        await asyncio.sleep(0)
        return asyncio.get_running_loop()

    a = asyncio.run(current_loop())
    b = asyncio.run(current_loop())
    assert a is not b
    assert a.is_closed() and b.is_closed()


def test_runner_reuses_one_loop():
    with asyncio.Runner() as runner:
        l1 = runner.get_loop()
        assert runner.run(compute(4)) == 6
        assert runner.run(compute(5)) == 10
        assert runner.get_loop() is l1


def test_asyncio_run_elapsed_real_time():
    t0 = time.monotonic()
    asyncio.run(asyncio.sleep(0.05))
    assert time.monotonic() - t0 >= 0.049


def test_no_running_loop_after_run():
    asyncio.run(compute(1))
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()


def test_exception_propagates_out_of_run():
    async def boom():
        await asyncio.sleep(0)
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        asyncio.run(boom())
