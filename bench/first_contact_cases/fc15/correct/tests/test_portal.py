"""LoopThread and call_in_loop: crossing between loops and threads."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from bridge import BridgeClosed, LoopThread, call_in_loop
from conftest import LONG


def test_run_returns_value_from_the_helper_thread(loop_thread):
    async def where():
        await asyncio.sleep(0.001)
        return threading.get_ident()

    ident = loop_thread.run(where(), timeout=LONG)
    assert ident == loop_thread.thread_ident != threading.get_ident()


def test_run_timeout_cancels_the_coroutine(loop_thread):
    entered = threading.Event()
    cancelled = threading.Event()

    async def stuck():
        entered.set()
        try:
            await asyncio.sleep(LONG)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        loop_thread.run(stuck(), timeout=0.05)
    # On a very slow machine the task may be cancelled before it ever ran;
    # either way no task may be left on the helper loop.
    deadline = time.monotonic() + LONG
    while loop_thread.call(lambda: len(asyncio.all_tasks())).result(LONG):
        assert time.monotonic() < deadline
        time.sleep(0.005)
    if entered.is_set():
        assert cancelled.wait(LONG)


def test_exceptions_cross_the_boundary(loop_thread):
    async def bad():
        raise LookupError("missing")

    with pytest.raises(LookupError, match="missing"):
        loop_thread.run(bad(), timeout=LONG)


def test_call_runs_plain_callable_on_loop_thread(loop_thread):
    fut = loop_thread.call(lambda a, b: (a + b, threading.get_ident()), 2, 3)
    assert fut.result(LONG) == (5, loop_thread.thread_ident)


def test_run_from_inside_the_loop_is_refused(loop_thread):
    async def noop():
        return 1

    def nested():
        return loop_thread.run(noop(), timeout=1)

    with pytest.raises(RuntimeError, match="loop thread"):
        loop_thread.call(nested).result(LONG)


def test_stop_cancels_pending_work_and_refuses_new():
    lt = LoopThread(name="bridge-loop-stop").start()
    fut = lt.submit(asyncio.sleep(LONG))
    lt.stop()
    assert fut.cancelled()
    lt.stop()  # idempotent
    coro = asyncio.sleep(0)
    with pytest.raises(BridgeClosed):
        lt.submit(coro)
    with pytest.raises(BridgeClosed):
        lt.call(print)


def test_submissions_from_several_threads(loop_thread):
    results = []
    lock = threading.Lock()

    async def double(x):
        await asyncio.sleep(0)
        return 2 * x

    def client(base):
        out = [loop_thread.run(double(base + i), timeout=LONG) for i in range(20)]
        with lock:
            results.extend(out)

    threads = [threading.Thread(target=client, args=(100 * k,), name=f"bridge-cl{k}")
               for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LONG)
    assert sorted(results) == sorted(2 * (100 * k + i) for k in range(4) for i in range(20))


@pytest.mark.asyncio
async def test_call_in_loop_from_a_worker_thread():
    loop = asyncio.get_running_loop()
    main_ident = threading.get_ident()
    state = {"hits": 0}

    async def bump(n):
        await asyncio.sleep(0)
        state["hits"] += n
        return threading.get_ident()

    def worker():
        plain = call_in_loop(loop, threading.get_ident, timeout=LONG)
        awaited = call_in_loop(loop, bump, 5, timeout=LONG)
        return plain, awaited

    plain, awaited = await asyncio.to_thread(worker)
    assert plain == awaited == main_ident
    assert state["hits"] == 5


@pytest.mark.asyncio
async def test_loop_thread_and_main_loop_talk_both_ways():
    main = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()

    async def forward(x):
        # runs on the helper loop; hands the value to the main loop
        main.call_soon_threadsafe(inbox.put_nowait, x * 10)
        return x

    lt = LoopThread(name="bridge-loop-both").start()
    try:
        cfut = lt.submit(forward(4))
        assert await asyncio.wait_for(asyncio.wrap_future(cfut), LONG) == 4
        assert await asyncio.wait_for(inbox.get(), LONG) == 40
    finally:
        await asyncio.to_thread(lt.stop)
