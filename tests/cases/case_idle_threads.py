"""Input for tests/test_cannot_lie.py: threads that wait, with no timeout, for the loop to hand them
something, while the coroutine sleeps a long time.

A thread blocked on a lock, an event, a condition or a queue with no timeout moves only when some
other thread wakes it; when every other thread waits so, only the loop's own thread can, so the
loop's clock may jump as it does with no thread at all. Each test sleeps LONG after its thread went
idle: on stock asyncio that is LONG seconds of real time (plain pytest passes each, slowly); a
controlled run that still waits in real time takes as long.
"""

import asyncio
import threading

import anyio.to_thread
import pytest

LONG = 10.0


def work() -> int:
    return 42


@pytest.mark.asyncio
async def test_an_idle_anyio_worker_thread() -> None:
    assert await anyio.to_thread.run_sync(work) == 42  # anyio's worker stays, idle, for 10 s
    await asyncio.sleep(LONG)


@pytest.mark.asyncio
async def test_an_idle_executor_thread() -> None:
    assert await asyncio.get_running_loop().run_in_executor(None, work) == 42
    await asyncio.sleep(LONG)


@pytest.mark.asyncio
async def test_a_thread_waiting_for_the_coroutine() -> None:
    go = threading.Event()
    done: list = []
    thread = threading.Thread(target=lambda: done.append(go.wait()))
    thread.start()
    await asyncio.sleep(LONG)
    go.set()
    await asyncio.to_thread(thread.join)
    assert done == [True]
