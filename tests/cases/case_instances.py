"""Input for tests/test_investigate.py: one class, used by two tasks through one instance (a lost
update on that instance) or through one instance each (no race on the counters; the test fails
for another reason: the order in which the workers finish)."""

import asyncio
import random

import pytest


class Counter:
    def __init__(self) -> None:
        self.n = 0

    async def incr(self) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        v = self.n
        await asyncio.sleep(0.0005)
        self.n = v + 1


DONE: list = []


async def worker(counter: Counter, name: str) -> None:
    await counter.incr()
    DONE.append(name)


@pytest.mark.asyncio
async def test_shared_counter() -> None:
    DONE.clear()
    counter = Counter()
    await asyncio.gather(worker(counter, "a"), worker(counter, "b"))
    assert counter.n == 2


@pytest.mark.asyncio
async def test_counter_each() -> None:
    DONE.clear()
    first, second = Counter(), Counter()
    await asyncio.gather(worker(first, "a"), worker(second, "b"))
    assert first.n == second.n == 1
    assert DONE == ["a", "b"]
