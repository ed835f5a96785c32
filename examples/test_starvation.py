"""A blocking call inside a coroutine: now and then the cache reload sleeps synchronously, the
event loop stalls, and the heartbeat misses its deadline."""

import asyncio
import random
import time

import pytest


async def heartbeat(beats: list) -> None:
    loop = asyncio.get_running_loop()
    for _ in range(4):
        beats.append(loop.time())
        await asyncio.sleep(0.01)


async def reload_cache() -> None:
    await asyncio.sleep(0.005)
    if random.random() < 0.3:  # the cache is cold
        time.sleep(0.08)  # a synchronous reload: blocks every task on the loop


@pytest.mark.asyncio
async def test_heartbeat_is_regular() -> None:
    beats: list = []
    await asyncio.gather(heartbeat(beats), reload_cache())
    gaps = [b - a for a, b in zip(beats, beats[1:])]
    assert max(gaps) < 0.04, f"the loop stalled for {max(gaps) * 1000:.0f} ms"
