import threading

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest

from relay import BlockingPool, Completion, Driver


@pytest.mark.anyio
async def test_worker_calls_back_into_loop_with_from_thread():
    main = threading.get_ident()

    def worker():
        return anyio.from_thread.run_sync(threading.get_ident)

    assert await anyio.to_thread.run_sync(worker) == main


@pytest.mark.anyio
async def test_fail_after_around_blocked_driver_call():
    gate = threading.Event()
    async with Driver() as d:
        t0 = anyio.current_time()
        with pytest.raises(TimeoutError):
            with anyio.fail_after(0.05):
                await d.call(lambda s: gate.wait(20))
        assert anyio.current_time() - t0 >= 0.045
        assert d.pending == 0
        gate.set()
        assert await d.incr("n") == 1


@pytest.mark.anyio
async def test_completion_wakes_task_group_waiters():
    done = Completion()
    results = []

    async def waiter():
        results.append(await done.wait(20))

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(waiter)
        await anyio.to_thread.run_sync(done.set_result, "go")
    assert results == ["go"] * 4


@pytest.mark.anyio
async def test_pool_jobs_in_a_task_group():
    pool = BlockingPool(workers=2)
    out = {}

    async def one(i):
        out[i] = await pool.run(pow, i, 2)

    try:
        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(one, i)
    finally:
        await pool.aclose()
    assert out == {i: i * i for i in range(8)}
