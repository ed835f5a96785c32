"""Starvation that fails every time, and its control.

test_heartbeat_survives_reindex: the index is rebuilt with a synchronous call on every run, so the
event loop stalls for 30 ms while the heartbeat must beat every 20 ms: it fails under every
schedule, and the blocking call is why.

test_index_has_every_word: the same heartbeat beside a coroutine that never blocks; it fails every
time for an ordinary reason (an off-by-one skips the first word): no blocking call, no cause.
"""

import asyncio
import time

import pytest

WORDS = ["alpha", "beta", "gamma"]


async def heartbeat(beats: list, worker: "asyncio.Task") -> None:
    """Beats every 10 ms until the worker is done; the first beat was taken before it started."""
    loop = asyncio.get_running_loop()
    while not worker.done():
        await asyncio.sleep(0.01)
        beats.append(loop.time())


async def reindex() -> dict:
    await asyncio.sleep(0)
    time.sleep(0.03)  # the index is rebuilt synchronously: every task on the loop waits
    return {w: len(w) for w in WORDS}


async def build_index() -> dict:
    await asyncio.sleep(0.005)
    return {w: len(w) for w in WORDS[1:]}  # an off-by-one: the first word is skipped


@pytest.mark.asyncio
async def test_heartbeat_survives_reindex() -> None:
    loop = asyncio.get_running_loop()
    beats = [loop.time()]
    worker = asyncio.create_task(reindex())
    await heartbeat(beats, worker)
    gaps = [b - a for a, b in zip(beats, beats[1:])]
    assert max(gaps) < 0.02, f"the heartbeat stalled for {max(gaps) * 1000:.0f} ms"


@pytest.mark.asyncio
async def test_index_has_every_word() -> None:
    loop = asyncio.get_running_loop()
    beats = [loop.time()]
    worker = asyncio.create_task(build_index())
    await heartbeat(beats, worker)
    gaps = [b - a for a, b in zip(beats, beats[1:])]
    assert max(gaps) < 0.02, f"the heartbeat stalled for {max(gaps) * 1000:.0f} ms"
    assert sorted(worker.result()) == sorted(WORDS)
