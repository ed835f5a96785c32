"""Condition / Event / Barrier tests in the style of a job coordinator (a build
farm that starts a stage when all workers are ready, a result cache that wakes
readers when a value is published).
"""
import asyncio

import pytest


class ResultBoard:
    """Readers wait until the key they want is published."""

    def __init__(self):
        self.cond = asyncio.Condition()
        self.values = {}

    async def publish(self, key, value):
        async with self.cond:
            self.values[key] = value
            self.cond.notify_all()

    async def wait_for_key(self, key):
        async with self.cond:
            await self.cond.wait_for(lambda: key in self.values)
            return self.values[key]


async def wait_until(predicate, timeout=10):
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


@pytest.mark.asyncio
async def test_wait_for_predicate_ignores_unrelated_notifications():
    board = ResultBoard()
    readers = [asyncio.create_task(board.wait_for_key("build-42")) for _ in range(3)]
    await board.publish("build-41", "old")       # notify_all, predicate still false
    await asyncio.sleep(0.05)
    assert not any(r.done() for r in readers)
    await board.publish("build-42", "artifact.tar")
    results = await asyncio.wait_for(asyncio.gather(*readers), 10)
    assert results == ["artifact.tar"] * 3


@pytest.mark.asyncio
async def test_notify_one_wakes_exactly_one_waiter():
    cond = asyncio.Condition()
    ready = 0
    woken = []

    async def waiter(i):
        nonlocal ready
        async with cond:
            ready += 1                   # same step as entering wait(): counted
            await cond.wait()            # means registered as a waiter
            woken.append(i)

    tasks = [asyncio.create_task(waiter(i)) for i in range(3)]
    await wait_until(lambda: ready == 3)
    async with cond:
        cond.notify(1)
    await wait_until(lambda: len(woken) == 1)
    await asyncio.sleep(0.05)
    assert len(woken) == 1
    async with cond:
        cond.notify_all()
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert sorted(woken) == [0, 1, 2]


@pytest.mark.asyncio
async def test_event_releases_all_waiters_and_can_be_cleared():
    ev = asyncio.Event()
    passed = []

    async def gatekeeper(i):
        await ev.wait()
        passed.append(i)

    tasks = [asyncio.create_task(gatekeeper(i)) for i in range(4)]
    await asyncio.sleep(0.02)
    assert passed == []
    ev.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert sorted(passed) == [0, 1, 2, 3]
    ev.clear()
    assert not ev.is_set()
    late = asyncio.create_task(ev.wait())
    await asyncio.sleep(0.02)
    assert not late.done()
    ev.set()
    assert await asyncio.wait_for(late, 10) is True


@pytest.mark.asyncio
async def test_barrier_gives_distinct_indices_over_two_rounds():
    barrier = asyncio.Barrier(3)
    rounds = {0: [], 1: []}

    async def stage_worker(name):
        for r in (0, 1):
            idx = await barrier.wait()
            rounds[r].append((name, idx))

    await asyncio.wait_for(
        asyncio.gather(*(stage_worker(n) for n in "abc")), 10)
    for r in (0, 1):
        assert sorted(n for n, _ in rounds[r]) == ["a", "b", "c"]
        assert sorted(i for _, i in rounds[r]) == [0, 1, 2]
    assert barrier.n_waiting == 0 and not barrier.broken


@pytest.mark.asyncio
async def test_barrier_abort_breaks_waiting_parties():
    barrier = asyncio.Barrier(3)

    async def party():
        await barrier.wait()

    waiters = [asyncio.create_task(party()) for _ in range(2)]
    await wait_until(lambda: barrier.n_waiting == 2)
    await barrier.abort()
    results = await asyncio.wait_for(
        asyncio.gather(*waiters, return_exceptions=True), 10)
    assert all(isinstance(r, asyncio.BrokenBarrierError) for r in results)
    assert barrier.broken
    with pytest.raises(asyncio.BrokenBarrierError):
        await barrier.wait()
