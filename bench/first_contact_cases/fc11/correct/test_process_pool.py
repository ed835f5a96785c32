"""Offloading CPU-bound work to a process pool the test owns, as image/ML
pipelines and build tools do (``loop.run_in_executor(ProcessPoolExecutor)``), plus
``loop.shutdown_default_executor`` on a loop the test owns.

Functions sent to the pool are top-level so they pickle by reference. The pool
uses the ``spawn`` start method, so no lock held by another thread is ever forked.
"""
import asyncio
import concurrent.futures
import hashlib
import multiprocessing
import os
import time

import pytest


def digest(data: bytes, rounds: int) -> str:
    h = data
    for _ in range(rounds):
        h = hashlib.sha256(h).digest()
    return h.hex()


def checked_div(a, b):
    if b == 0:
        raise ValueError(f"cannot split {a} into 0 parts")
    return a // b


def worker_pid():
    return os.getpid()


def slow_square(x, delay):
    time.sleep(delay)
    return x * x


@pytest.fixture(scope="module")
def pool():
    ex = concurrent.futures.ProcessPoolExecutor(
        max_workers=2, mp_context=multiprocessing.get_context("spawn")
    )
    yield ex
    ex.shutdown(wait=True)


@pytest.mark.asyncio
async def test_results_in_argument_order(pool):
    loop = asyncio.get_running_loop()
    jobs = [loop.run_in_executor(pool, digest, bytes([i]), 2000) for i in range(4)]
    results = await asyncio.wait_for(asyncio.gather(*jobs), 60)
    assert results == [digest(bytes([i]), 2000) for i in range(4)]


@pytest.mark.asyncio
async def test_worker_exception_propagates(pool):
    loop = asyncio.get_running_loop()
    assert await asyncio.wait_for(loop.run_in_executor(pool, checked_div, 9, 2), 60) == 4
    with pytest.raises(ValueError, match="into 0 parts"):
        await asyncio.wait_for(loop.run_in_executor(pool, checked_div, 9, 0), 60)


@pytest.mark.asyncio
async def test_runs_in_another_process(pool):
    loop = asyncio.get_running_loop()
    pid = await asyncio.wait_for(loop.run_in_executor(pool, worker_pid), 60)
    assert pid != os.getpid()


@pytest.mark.asyncio
async def test_cancelled_await_leaves_pool_usable(pool):
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(pool, slow_square, 3, 0.3)
    waiter = asyncio.ensure_future(fut)
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    # The job may already be running in a worker; the pool still works.
    assert await asyncio.wait_for(loop.run_in_executor(pool, slow_square, 4, 0), 60) == 16


def test_shutdown_default_executor_on_own_loop():
    async def main():
        loop = asyncio.get_running_loop()
        names = await asyncio.gather(
            *(loop.run_in_executor(None, lambda i=i: (i, os.getpid())) for i in range(3))
        )
        assert sorted(n for n, _ in names) == [0, 1, 2]
        await loop.shutdown_default_executor()
        with pytest.raises(RuntimeError):
            loop.run_in_executor(None, print)
        return "done"

    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(main()) == "done"
    finally:
        loop.close()
    assert loop.is_closed()
