"""Input for tests/test_cannot_lie.py: a thread is at work when the schedule delays a step long.

A thread works 10 ms (and ends) while the test takes a few steps; a task sleeps 30 s meanwhile, so
the systematic search delays a step by up to about 30 s (the gap to that timer). A delayed step
while a thread works passes in real time -- the thread must progress as it would on a machine where
the step took that long -- but only while the thread works: once it has ended, nothing real is left
to overtake and the rest of the delay is virtual. Realized whole, the 30 s delay outlasts the run's
hang limit, and a test plain pytest passes in 10 ms is reported as hanging.
"""

import asyncio
import threading
import time

import pytest


@pytest.mark.asyncio
async def test_a_long_delay_begins_while_a_thread_works() -> None:
    done = threading.Event()

    def work() -> None:
        time.sleep(0.01)
        done.set()

    thread = threading.Thread(target=work, name="ten-ms-worker")
    thread.start()
    sleeper = asyncio.ensure_future(asyncio.sleep(30))
    for _ in range(3):
        await asyncio.sleep(0)
    sleeper.cancel()
    thread.join()
    assert done.is_set()
