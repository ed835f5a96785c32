"""Sync facade over a private loop thread (run_coroutine_threadsafe + result(timeout))."""

import asyncio
import threading
import time

import pytest

from pacer import BridgeClosed, SyncFacade, stats

EPS = 0.010


async def double(x):
    await asyncio.sleep(0)
    return 2 * x


def test_call_returns_the_result(facade):
    assert facade.call(double, 21) == 42
    assert stats.get("facade.calls") == 1


def test_coroutines_run_on_the_private_loop_thread(facade):
    async def where():
        return threading.current_thread().name

    assert facade.call(where) == facade.thread_name
    assert facade.thread_name != threading.current_thread().name


def test_exceptions_propagate(facade):
    async def fail():
        raise KeyError("missing")

    with pytest.raises(KeyError):
        facade.call(fail)


def test_timeout_has_a_lower_bound_and_cancels_the_coroutine(facade, stopwatch):
    ran = threading.Event()
    cancelled = threading.Event()

    async def hang():
        ran.set()
        try:
            await asyncio.sleep(3600)
        finally:
            cancelled.set()

    stopwatch.start()
    with pytest.raises(TimeoutError):
        facade.call(hang, timeout=0.05)
    assert stopwatch.at_least(0.05)
    # call() returns only once a started coroutine has unwound; one that had not started
    # by the deadline is never started at all
    assert ran.is_set() == cancelled.is_set()


def test_a_result_that_completes_as_the_timeout_hits_is_not_lost(facade):
    inbox = ["message-1"]

    async def take():
        item = inbox.pop()       # side effect first ...
        time.sleep(0.1)          # ... then a slow (blocking) decode step
        return item

    try:
        got = facade.call(take, timeout=0.02)
    except TimeoutError:
        # only acceptable if the coroutine never started: then nothing was taken
        assert inbox == ["message-1"]
    else:
        assert got == "message-1"
        assert inbox == []


def test_many_threads_call_concurrently(facade):
    results = {}

    def worker(i):
        results[i] = facade.call(double, i, timeout=10)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == {i: 2 * i for i in range(8)}


def test_sleep_inside_the_facade_has_a_lower_bound(facade, stopwatch):
    async def nap():
        await asyncio.sleep(0.05)
        return "rested"

    stopwatch.start()
    assert facade.call(nap, timeout=10) == "rested"
    assert stopwatch.at_least(0.05)


def test_calls_after_close_are_refused():
    facade = SyncFacade().start()
    facade.close()
    facade.close()  # idempotent
    with pytest.raises(BridgeClosed):
        facade.call(double, 1)


def test_context_manager_stops_the_thread():
    with SyncFacade() as facade:
        name = facade.thread_name
        assert facade.call(double, 2) == 4
    assert name not in [t.name for t in threading.enumerate()]
