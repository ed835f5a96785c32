"""A collision window known in closed form.

The writer yields once, then sleeps 1 ms; the reader sleeps 1.5 ms. Both start in the same loop
iteration, reader second; the writer's 1 ms timer is armed one iteration later, after the reader's
first step. So the writer's timer fires first exactly when that step of the reader takes less than
0.5 ms: the test fails exactly when reader#0, step 0, is delayed by 500 us or more.
"""

import asyncio

import pytest


STATE: dict = {}


async def writer() -> None:
    await asyncio.sleep(0)  # one more loop iteration before the timer is armed
    await asyncio.sleep(0.001)
    STATE["ready"] = True


async def reader() -> None:
    await asyncio.sleep(0.0015)  # "the writer needs 1 ms; 1.5 ms is plenty"
    assert STATE.get("ready"), "read before the write"


@pytest.mark.asyncio
async def test_reader_sees_write() -> None:
    STATE.clear()
    await asyncio.gather(writer(), reader())
