"""Control (uncontrolled): two OS threads increment a counter without a lock; the loop cannot control threads.

The increments run in a thread pool (asyncio.to_thread): the read and the write of the counter
are separated by a tiny sleep that releases the GIL, so when the two threads happen to run at
the same moment an increment is lost. The event loop does not schedule threads, so a failing
schedule cannot be replayed deterministically: the engine must abstain, not name an asyncio race.
"""

import asyncio
import random
import time

import pytest

EXPECTED = {"verdict": "abstained", "cause": None}

COUNTER = {"n": 0}


def bump() -> None:
    time.sleep(random.uniform(0, 0.002))  # the thread gets to it when it gets to it
    value = COUNTER["n"]
    time.sleep(0.0002)  # releases the GIL: the other thread may run here
    COUNTER["n"] = value + 1


@pytest.mark.asyncio
async def test_threads_count() -> None:
    COUNTER["n"] = 0
    await asyncio.gather(asyncio.to_thread(bump), asyncio.to_thread(bump))
    assert COUNTER["n"] == 2
