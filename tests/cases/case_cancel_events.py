"""Input for tests/test_cancel_events.py: one program per cancellation or hand-off the runtime
records. Each test passes; what is checked is the events of its run, so the comments on the lines
the events must name are markers the test looks for."""

import asyncio
import sys

import pytest


async def sleeper() -> None:
    await asyncio.sleep(10)  # mark: sleeper awaits


async def swallower() -> str:
    try:
        await asyncio.sleep(10)  # mark: swallower awaits
    except asyncio.CancelledError:
        pass
    return "swallowed"


async def uncanceller() -> int:
    try:
        await asyncio.sleep(10)  # mark: uncanceller awaits
    except asyncio.CancelledError:
        if sys.version_info >= (3, 11):
            asyncio.current_task().uncancel()  # type: ignore[union-attr]  # mark: uncancel call
    await asyncio.sleep(0)  # mark: uncanceller suspends again
    return 1


async def slow() -> None:
    await asyncio.sleep(10)  # mark: slow


async def holder(lock: asyncio.Lock) -> None:
    async with lock:
        await asyncio.sleep(0.001)


async def waiter(lock: asyncio.Lock) -> int:
    async with lock:
        return 1


async def consumer(q: "asyncio.Queue[int]") -> int:
    return await q.get()


async def awaiter(fut: "asyncio.Future[int]") -> str:
    try:
        await fut  # mark: awaiter awaits the future
    except ValueError:
        return "got"
    return "nothing"


@pytest.mark.asyncio
async def test_cancel_sleeping() -> None:
    t = asyncio.ensure_future(sleeper())
    await asyncio.sleep(0)
    t.cancel("stop")
    with pytest.raises(asyncio.CancelledError):
        await t


@pytest.mark.asyncio
async def test_cancel_swallowed() -> None:
    t = asyncio.ensure_future(swallower())
    await asyncio.sleep(0)
    t.cancel()
    assert await t == "swallowed"


@pytest.mark.asyncio
async def test_uncancel() -> None:
    t = asyncio.ensure_future(uncanceller())
    await asyncio.sleep(0)
    t.cancel()
    assert await t == 1


@pytest.mark.asyncio
async def test_wait_for_times_out() -> None:
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(slow(), 0.01)  # mark: wait_for armed


@pytest.mark.asyncio
async def test_timeout_context() -> None:
    if sys.version_info < (3, 11):
        return  # asyncio.timeout is new in 3.11: nothing to record
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):  # type: ignore[attr-defined]  # mark: timeout armed
            await asyncio.sleep(10)


@pytest.mark.asyncio
async def test_lock_handoff() -> None:
    lock = asyncio.Lock()  # mark: lock one
    h = asyncio.ensure_future(holder(lock))
    await asyncio.sleep(0)
    w = asyncio.ensure_future(waiter(lock))
    await h
    assert await w == 1


@pytest.mark.asyncio
async def test_lock_handoff_then_cancel() -> None:
    lock = asyncio.Lock()  # mark: lock two
    await lock.acquire()
    w = asyncio.ensure_future(waiter(lock))
    await asyncio.sleep(0)
    lock.release()  # the waiter is handed the lock: its wake-up is scheduled
    w.cancel()  # and it is cancelled before it resumes
    with pytest.raises(asyncio.CancelledError):
        await w
    assert not lock.locked()


@pytest.mark.asyncio
async def test_queue_handoff() -> None:
    q: "asyncio.Queue[int]" = asyncio.Queue()  # mark: the queue
    c = asyncio.ensure_future(consumer(q))
    await asyncio.sleep(0)
    q.put_nowait(5)
    assert await c == 5


@pytest.mark.asyncio
async def test_future_exception() -> None:
    fut: "asyncio.Future[int]" = asyncio.get_running_loop().create_future()
    a = asyncio.ensure_future(awaiter(fut))
    await asyncio.sleep(0)
    fut.set_exception(ValueError("x"))
    assert await a == "got"
