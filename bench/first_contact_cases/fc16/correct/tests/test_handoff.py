import asyncio
import threading

import pytest

from relay import Completion, callback_to_future, on_loop_thread, resolve_threadsafe
from _helpers import EVENTUALLY


@pytest.mark.asyncio
async def test_thread_resolves_future_with_value():
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    t = threading.Thread(target=resolve_threadsafe, args=(loop, fut, 42), name="relay-t")
    t.start()
    assert await asyncio.wait_for(fut, EVENTUALLY) == 42
    await asyncio.to_thread(t.join)


@pytest.mark.asyncio
async def test_thread_resolves_future_with_exception():
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    t = threading.Thread(target=resolve_threadsafe,
                         args=(loop, fut, None, KeyError("k")), name="relay-t")
    t.start()
    with pytest.raises(KeyError):
        await asyncio.wait_for(fut, EVENTUALLY)
    await asyncio.to_thread(t.join)


@pytest.mark.asyncio
async def test_late_result_for_cancelled_future_is_dropped(loop_errors):
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    fut.cancel()
    ok = await asyncio.to_thread(resolve_threadsafe, loop, fut, "late")
    assert ok is True
    for _ in range(3):
        await asyncio.sleep(0)
    assert fut.cancelled()


def test_resolve_on_closed_loop_reports_false():
    loop = asyncio.new_event_loop()
    fut = loop.create_future()
    loop.close()
    assert resolve_threadsafe(loop, fut, 1) is False


@pytest.mark.asyncio
async def test_completion_first_of_many_threads_wins():
    done = Completion()
    wins = []
    barrier = threading.Barrier(8)

    def racer(i):
        barrier.wait()
        if done.set_result(i):
            wins.append(i)

    threads = [threading.Thread(target=racer, args=(i,), name=f"relay-r{i}") for i in range(8)]
    for t in threads:
        t.start()
    value = await done.wait(EVENTUALLY)
    for t in threads:
        await asyncio.to_thread(t.join)
    assert wins == [value]


@pytest.mark.asyncio
async def test_completion_wait_timeout_does_not_cancel_the_slot():
    done = Completion()
    with pytest.raises(asyncio.TimeoutError):
        await done.wait(0.01)
    assert not done.claimed
    t = threading.Thread(target=done.set_result, args=("ok",), name="relay-t")
    t.start()
    assert await done.wait(EVENTUALLY) == "ok"
    await asyncio.to_thread(t.join)


@pytest.mark.asyncio
async def test_completion_set_on_loop_thread_is_immediate():
    done = Completion()
    assert done.set_result(7) is True
    assert done.set_exception(RuntimeError()) is False
    assert done._fut.done()  # no round trip through the loop needed
    assert await done.wait() == 7


@pytest.mark.asyncio
async def test_callback_api_called_from_worker_thread():
    threads = []

    def register(x, callback):
        def work():
            if x < 0:
                callback(ValueError("negative"))
            else:
                callback(None, x * 2)
        t = threading.Thread(target=work, name="relay-cb")
        threads.append(t)
        t.start()

    assert await asyncio.wait_for(callback_to_future(register, 21), EVENTUALLY) == 42
    with pytest.raises(ValueError):
        await asyncio.wait_for(callback_to_future(register, -1), EVENTUALLY)
    for t in threads:
        await asyncio.to_thread(t.join)


@pytest.mark.asyncio
async def test_callback_api_called_synchronously_on_loop():
    fut = callback_to_future(lambda x, cb: cb(None, x + 1), 1)
    assert fut.done() and fut.result() == 2


@pytest.mark.asyncio
async def test_on_loop_thread():
    loop = asyncio.get_running_loop()
    assert on_loop_thread(loop)
    assert not await asyncio.to_thread(on_loop_thread, loop)
