"""A queue consumer that drains too early: it stops as soon as the queue is momentarily empty."""

import asyncio
import random

import pytest


async def producer(queue: asyncio.Queue) -> None:
    for item in range(5):
        await asyncio.sleep(random.uniform(0, 0.0015))  # each item takes a while to fetch
        await queue.put(item)


async def consumer(queue: asyncio.Queue, out: list) -> None:
    await asyncio.sleep(0.006)  # "the producer is done by then"
    while not queue.empty():
        out.append(await queue.get())


@pytest.mark.asyncio
async def test_consumer_gets_everything() -> None:
    queue: asyncio.Queue = asyncio.Queue()
    out: list = []
    await asyncio.gather(producer(queue), consumer(queue, out))
    assert out == [0, 1, 2, 3, 4]
