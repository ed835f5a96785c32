"""A cancelled Queue.get loses an item: a batch read under a timeout drops what it had already taken.

`read_pair()` takes two items off the queue. When the timeout cancels it after the first get()
and before the second, the first item has left the queue but is never returned: it is lost.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "order_violation", "resource": "Queue@"}


async def read_pair(queue: asyncio.Queue) -> list:
    pair = []
    while len(pair) < 2:
        pair.append(await queue.get())
    return pair


async def produce(queue: asyncio.Queue, done: asyncio.Event) -> None:
    for item in range(4):
        await asyncio.sleep(random.uniform(0, 0.0012))  # events arrive from a sensor
        queue.put_nowait(item)
    done.set()


async def consume(queue: asyncio.Queue, done: asyncio.Event, received: list) -> None:
    while not (done.is_set() and queue.empty()):
        try:
            received.extend(await asyncio.wait_for(read_pair(queue), timeout=0.003))
        except asyncio.TimeoutError:
            pass  # "nothing arrived in time; try again"


@pytest.mark.asyncio
async def test_no_event_is_lost() -> None:
    queue: asyncio.Queue = asyncio.Queue()
    done = asyncio.Event()
    received: list = []
    await asyncio.gather(produce(queue, done), consume(queue, done, received))
    assert received == [0, 1, 2, 3]
