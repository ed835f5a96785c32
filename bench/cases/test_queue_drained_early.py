"""A batch consumer drains the queue too early: it takes what is there after 3 ms and stops.

The consumer waits for the first item, gives the producer "time to finish", then empties the
queue with get_nowait() until it is momentarily empty. Items put after that are never collected.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "order_violation", "resource": "Queue@"}


async def produce(queue: asyncio.Queue) -> None:
    for item in range(4):
        await asyncio.sleep(random.uniform(0, 0.001))  # each record is read from a socket
        queue.put_nowait(item)


async def collect_batch(queue: asyncio.Queue) -> list:
    batch = [await queue.get()]
    await asyncio.sleep(0.003)  # "the rest of the batch is there by now"
    while not queue.empty():
        batch.append(queue.get_nowait())
    return batch


@pytest.mark.asyncio
async def test_batch_is_complete() -> None:
    queue: asyncio.Queue = asyncio.Queue()
    _, batch = await asyncio.gather(produce(queue), collect_batch(queue))
    assert batch == [0, 1, 2, 3]
