"""Input for tests/test_cannot_lie.py: a thread finishes in real time while a coroutine sleeps.

The thread sleeps 10 ms and sets a flag; the coroutine sleeps 0.2 s and then asserts the flag. On
stock asyncio the 0.2 s are 0.2 s of real time, so the thread is long done: plain pytest passes
these every time, and no order of the loop's ready queue can change that.
"""

import asyncio
import threading
import time

import pytest

THREAD_WORK = 0.01
COROUTINE_WAIT = 0.2


class Flag:
    def __init__(self) -> None:
        self.set = False

    def work(self) -> None:
        time.sleep(THREAD_WORK)
        self.set = True


@pytest.mark.asyncio
async def test_thread_finishes_while_the_coroutine_sleeps() -> None:
    flag = Flag()
    thread = threading.Thread(target=flag.work)
    thread.start()
    await asyncio.sleep(COROUTINE_WAIT)
    try:
        assert flag.set, "the thread had not set its flag after 0.2 s"
    finally:
        thread.join()


@pytest.mark.asyncio
async def test_executor_job_finishes_while_the_coroutine_sleeps() -> None:
    flag = Flag()
    job = asyncio.get_running_loop().run_in_executor(None, flag.work)
    await asyncio.sleep(COROUTINE_WAIT)
    try:
        assert flag.set, "the executor job had not set its flag after 0.2 s"
    finally:
        await job


@pytest.mark.asyncio
async def test_to_thread_finishes_while_the_coroutine_sleeps() -> None:
    flag = Flag()
    job = asyncio.ensure_future(asyncio.to_thread(flag.work))
    await asyncio.sleep(COROUTINE_WAIT)
    try:
        assert flag.set, "asyncio.to_thread's job had not set its flag after 0.2 s"
    finally:
        await job


class BackgroundLoop:
    """A library's own event loop in a thread of its own (unsync, a sync-to-async portal): the
    thread makes its loop with asyncio.new_event_loop() and runs it forever."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


async def timed_sleep() -> float:
    loop = asyncio.get_running_loop()
    t0, l0 = time.monotonic(), loop.time()
    await asyncio.sleep(THREAD_WORK)
    real, looped = time.monotonic() - t0, loop.time() - l0
    assert abs(real - looped) < THREAD_WORK, f"the loop's clock moved {looped} s, the real one {real} s"
    return real


@pytest.mark.asyncio
async def test_a_loop_in_its_own_thread_keeps_real_time() -> None:
    background = BackgroundLoop()
    try:
        elapsed = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(timed_sleep(), background.loop))
        assert elapsed >= THREAD_WORK, f"a sleep of {THREAD_WORK} s on the thread's loop took {elapsed} s"
    finally:
        background.close()
