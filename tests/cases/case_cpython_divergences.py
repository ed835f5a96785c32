"""Input for tests/test_cpython_fidelity.py: what CPython's own asyncio tests showed the controlled
loop doing differently from stock asyncio (issue 31). Plain pytest passes every one.

- A child process's exit reaches a SafeChildWatcher as SIGCHLD, whose handler the loop runs from
  the byte the signal writes to its self-pipe: stock asyncio's select() waits for it, with a timer
  pending or none.
- An interval timer (setitimer, alarm) sends SIGALRM in real time; a handler the loop runs wakes
  the waiter as the child's exit does.
- asyncio.all_tasks() returns a set, and the loop's _ready and _scheduled show what is queued.
"""

import asyncio
import signal
import sys
import warnings

import pytest


async def _exit_code_through_sigchld(timeout: float = 0.0) -> int:
    loop = asyncio.get_running_loop()
    with warnings.catch_warnings():  # the SIGCHLD watchers are deprecated from 3.12
        warnings.simplefilter("ignore", DeprecationWarning)
        watcher = asyncio.SafeChildWatcher()
        watcher.attach_loop(loop)
        asyncio.set_child_watcher(watcher)
    try:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "import time; time.sleep(0.1)")
        return await (asyncio.wait_for(proc.wait(), timeout) if timeout else proc.wait())
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            asyncio.set_child_watcher(None)
        watcher.close()


@pytest.mark.asyncio
async def test_a_child_exit_wakes_its_waiter_through_sigchld() -> None:
    assert await _exit_code_through_sigchld() == 0


@pytest.mark.asyncio
async def test_a_child_exit_wakes_its_waiter_through_sigchld_under_a_timeout() -> None:
    assert await _exit_code_through_sigchld(timeout=30) == 0


@pytest.mark.asyncio
async def test_an_interval_timer_signal_wakes_its_waiter() -> None:
    loop = asyncio.get_running_loop()
    got = loop.create_future()
    loop.add_signal_handler(signal.SIGALRM, lambda: got.done() or got.set_result("alarm"))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        assert await got == "alarm"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        loop.remove_signal_handler(signal.SIGALRM)


@pytest.mark.asyncio
async def test_all_tasks_is_a_set() -> None:
    others = [asyncio.create_task(asyncio.sleep(0)) for _ in range(3)]
    tasks = asyncio.all_tasks()
    assert type(tasks) is set
    assert set(others) <= tasks and asyncio.current_task() in tasks
    await asyncio.gather(*others)


@pytest.mark.asyncio
async def test_ready_and_scheduled_show_what_is_queued() -> None:
    loop = asyncio.get_running_loop()
    later = loop.call_later(60, lambda: None)
    sooner = loop.call_later(30, lambda: None)
    soon = loop.call_soon(lambda: None)
    try:
        assert soon in loop._ready and len(loop._ready) >= 1
        assert later in loop._scheduled and loop._scheduled[0] is sooner
    finally:
        later.cancel()
        sooner.cancel()


@pytest.mark.asyncio
async def test_background_tasks_cancelled_by_walking_their_set() -> None:
    """A program's own set of tasks, walked to cancel them: the order of the walk is the order
    their cancellations run in. Any order passes; a replay must walk it alike in every process."""
    cancelled = []

    async def worker(i: int) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    background = {asyncio.create_task(worker(i)) for i in range(300)}
    await asyncio.sleep(0)
    for task in background:
        task.cancel()
    await asyncio.gather(*background, return_exceptions=True)
    assert sorted(cancelled) == list(range(300))
