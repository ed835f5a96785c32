"""A worker thread runs a coroutine on the loop with a tiny timeout and assumes
the coroutine has already started when the timeout fires.

Modelled on python-zeroconf/python-zeroconf#1683 (test_run_coro_with_timeout:
the thread's `concurrent.futures.Future.result(timeout)` waited only 0.1 ms,
so on a loaded machine it could time out before the event loop had run the
scheduled coroutine at all, and the `task` captured by the coroutine was still
None; the fix waits on a threading.Event set by the coroutine before looking
at the task).

A worker thread asks the loop (busy decoding packets, yielding between them) to run a probe that records its task and
then sleeps; the thread waits `WAIT` seconds and, on timeout, cancels the
probe's task through `call_soon_threadsafe`.  Whether the loop has run the
probe's first step before the thread looks at `task` depends on who takes the
GIL when the loop next releases it (in its select() call between packets), so
sometimes `task` is still None and the cancel is impossible.

Kind: race (thread vs loop; the thread assumes an ordering the loop does not promise).
"""
import asyncio
import concurrent.futures
import json

import pytest

WAIT = 0.00001
ROUNDS = 1
PACKET = json.dumps([{"name": f"_svc{i}._tcp.local.", "ttl": 120, "port": 8000 + i} for i in range(300)])


async def listener(stop):
    """The loop is busy decoding incoming mDNS packets, yielding between them."""
    while not stop.is_set():
        json.loads(PACKET)
        await asyncio.sleep(0)


def run_coro_with_timeout(loop, probe_state):
    async def probe():
        probe_state["task"] = asyncio.current_task()
        await asyncio.sleep(10)

    cfut = asyncio.run_coroutine_threadsafe(probe(), loop)
    try:
        cfut.result(WAIT)
    except concurrent.futures.TimeoutError:
        task = probe_state.get("task")  # BUG: assumes the probe already ran
        if task is None:
            cfut.cancel()
            return "not-started"
        loop.call_soon_threadsafe(task.cancel)
        return "cancelled"
    return "finished"


@pytest.mark.asyncio
async def test_blocked_probe_can_be_cancelled():
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    busy = asyncio.ensure_future(listener(stop))
    outcomes = []
    try:
        for _ in range(ROUNDS):
            state = {}
            outcomes.append(await asyncio.to_thread(run_coro_with_timeout, loop, state))
            await asyncio.sleep(0.001)
    finally:
        stop.set()
        await busy
    assert outcomes == ["cancelled"] * ROUNDS, outcomes
