"""asyncio.wait_for swallows a cancellation (Python <= 3.11) when the inner call has just finished.

The poller wraps each poll in wait_for(). When the test cancels the poller in the same loop
iteration in which a poll completes (the poll is done, wait_for has not resumed yet), wait_for
returns the poll's result instead of raising CancelledError, and the poller keeps running.
(Python 3.12 rewrote wait_for on asyncio.timeout and no longer swallows it: there this case passes.)
"""

import asyncio
import contextlib
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "order_violation"}


async def poll_once() -> int:
    await asyncio.sleep(0.003)  # one round trip to the remote end
    return 1


async def poller(state: dict) -> None:
    while state["running"]:
        state["polls"] += await asyncio.wait_for(poll_once(), timeout=1)


@pytest.mark.asyncio
async def test_poller_stops_when_cancelled() -> None:
    state = {"polls": 0, "running": True}
    task = asyncio.create_task(poller(state))
    await asyncio.sleep(random.uniform(0.001, 0.01))  # let it poll for a while
    task.cancel()
    await asyncio.sleep(0.004)
    stopped = task.done()
    state["running"] = False  # clean up either way
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert stopped, "the poller swallowed the cancellation and kept polling"
