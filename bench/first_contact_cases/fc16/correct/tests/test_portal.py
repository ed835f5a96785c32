import asyncio
import concurrent.futures
import threading

import pytest

from relay import BackgroundLoop, Closed, call_from_thread
from _helpers import EVENTUALLY


@pytest.fixture
def bg():
    with BackgroundLoop() as b:
        yield b


@pytest.mark.asyncio
async def test_call_from_thread_runs_sync_fn_on_loop():
    main = threading.get_ident()
    loop = asyncio.get_running_loop()
    got = await asyncio.to_thread(call_from_thread, loop, threading.get_ident)
    assert got == main


@pytest.mark.asyncio
async def test_call_from_thread_awaits_coroutines():
    loop = asyncio.get_running_loop()

    async def double(x):
        await asyncio.sleep(0)
        return x * 2

    assert await asyncio.to_thread(call_from_thread, loop, double, 4) == 8


@pytest.mark.asyncio
async def test_call_from_thread_on_loop_thread_is_refused():
    with pytest.raises(RuntimeError):
        call_from_thread(asyncio.get_running_loop(), lambda: None)


@pytest.mark.asyncio
async def test_call_from_thread_propagates_errors():
    loop = asyncio.get_running_loop()

    def bad():
        raise KeyError("x")

    with pytest.raises(KeyError):
        await asyncio.to_thread(call_from_thread, loop, bad)


def test_background_loop_run_returns_on_its_thread(bg):
    async def where():
        return threading.current_thread().name

    assert bg.run(where()) == "relay-bgloop"


@pytest.mark.asyncio
async def test_arun_from_main_loop(bg):
    async def add(a, b):
        await asyncio.sleep(0.001)
        return a + b

    assert await bg.arun(add(1, 2), EVENTUALLY) == 3

    async def bad():
        raise ValueError

    with pytest.raises(ValueError):
        await bg.arun(bad(), EVENTUALLY)


def test_stop_cancels_pending_work_and_refuses_new():
    b = BackgroundLoop().start()
    started = threading.Event()
    saw_cancel = []

    async def forever():
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            saw_cancel.append(True)
            raise

    cfut = b.submit(forever())
    assert started.wait(EVENTUALLY)
    b.stop()
    b.stop()
    assert not b.thread.is_alive()
    assert saw_cancel == [True]
    with pytest.raises(concurrent.futures.CancelledError):
        cfut.result(EVENTUALLY)
    with pytest.raises(Closed):
        b.submit(asyncio.sleep(0))


def test_run_from_its_own_thread_is_refused(bg):
    async def nested():
        inner = asyncio.sleep(0)
        try:
            bg.run(inner)
        except RuntimeError as e:
            return str(e)

    assert "own thread" in bg.run(nested())


@pytest.mark.asyncio
async def test_background_loop_hands_result_to_main_loop(bg):
    main = asyncio.get_running_loop()
    fut = main.create_future()

    async def produce():
        await asyncio.sleep(0.001)
        main.call_soon_threadsafe(fut.set_result, threading.current_thread().name)

    bg.submit(produce())
    assert await asyncio.wait_for(fut, EVENTUALLY) == "relay-bgloop"


def test_many_threads_submit_concurrently(bg):
    async def ident(i):
        await asyncio.sleep(0)
        return i

    results = {}

    def client(c):
        results[c] = [bg.run(ident(c * 100 + i)) for i in range(20)]

    threads = [threading.Thread(target=client, args=(c,), name=f"relay-c{c}") for c in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(EVENTUALLY)
    assert results == {c: [c * 100 + i for i in range(20)] for c in range(4)}
