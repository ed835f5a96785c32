"""Control (FIFO-dependent but correct): call_soon callbacks and sleep(0) alternation run in order.

asyncio runs ready callbacks first-in first-out: callbacks scheduled with call_soon run in the
order they were scheduled, and two tasks that yield with sleep(0) alternate strictly. The test
depends on that order, which every real loop keeps; it must never be reported as a race.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "no_failure", "cause": None}


async def ping_pong(name: str, log: list) -> None:
    for i in range(3):
        log.append(f"{name}{i}")
        sum(random.random() for _ in range(50))  # some work of variable length
        await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_fifo_order() -> None:
    loop = asyncio.get_running_loop()
    calls: list = []
    done = loop.create_future()
    for i in range(4):
        loop.call_soon(calls.append, i)
    loop.call_soon(done.set_result, None)
    await done
    assert calls == [0, 1, 2, 3]

    log: list = []
    await asyncio.gather(ping_pong("a", log), ping_pong("b", log))
    assert log == ["a0", "b0", "a1", "b1", "a2", "b2"]
