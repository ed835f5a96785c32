"""Tests whose schedule space explore can close after the zero schedule's measured run (closure.h),
and tests it must not close: each for one reason. All pass under every schedule."""

import asyncio
import random

import pytest


@pytest.mark.asyncio
async def test_queue_handoff() -> None:
    """No timer, no clock, no random: every schedule runs the zero schedule's run."""
    q: asyncio.Queue = asyncio.Queue()

    async def produce() -> None:
        for i in range(3):
            await q.put(i)

    task = asyncio.create_task(produce())
    got = [await q.get() for _ in range(3)]
    await task
    assert got == [0, 1, 2]


@pytest.mark.asyncio
async def test_many_steps() -> None:
    """More steps than one run measures (64): repeats of the zero schedule measure the rest."""

    async def hop(log: list, name: str) -> None:
        for i in range(40):
            log.append((name, i))
            await asyncio.sleep(0)

    log: list = []
    await asyncio.gather(hop(log, "a"), hop(log, "b"), hop(log, "c"))
    assert len(log) == 120


@pytest.mark.asyncio
async def test_guarded_by_timeouts() -> None:
    """Its only timers are timeouts it arms: closed below them."""

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    for _ in range(3):
        assert await asyncio.wait_for(answer(), 5) == 42


@pytest.mark.asyncio
async def test_ttl_left_pending() -> None:
    """Arms a TTL (a timer that is no task's wake-up) that is still pending at the end: closed
    below it, as a schedule can only change the run by outlasting it."""
    loop = asyncio.get_running_loop()
    cache = {"k": 1}
    handle = loop.call_later(60, cache.pop, "k")
    await asyncio.sleep(0)  # the TTL is pending across an iteration of the loop
    assert cache == {"k": 1}
    handle.cancel()


@pytest.mark.asyncio
async def test_two_sleepers() -> None:
    """Two timers: a delay can reorder their wake-ups, so the search stays open."""
    order: list = []

    async def sleeper(name: str, seconds: float) -> None:
        await asyncio.sleep(seconds)
        order.append(name)

    await asyncio.gather(sleeper("a", 0.01), sleeper("b", 0.02))
    assert sorted(order) == ["a", "b"]


@pytest.mark.asyncio
async def test_draws_random() -> None:
    """Each schedule seeds `random`: its runs differ by input, so the search stays open."""
    await asyncio.sleep(0)
    assert 0 <= random.random() < 1


@pytest.mark.asyncio
async def test_reads_the_clock() -> None:
    """Reads loop.time() after a step whose delay moves it: open."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.sleep(0)
    assert loop.time() >= start
