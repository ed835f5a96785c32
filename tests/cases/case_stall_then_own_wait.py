"""Input for tests/test_cannot_lie.py: a step stalled to just short of a timeout, then the program's
own short wait, which the timeout then ends.

It passes under plain pytest every time: five steps and a 50 ms sleep inside a 1 s timeout. A
background sleep of 5 s is pending, so a schedule that stalls a step past the pending sleeps is
capped just short of the timeout (1 ms): the 50 ms sleep after it cannot fit, and the timeout fires
on time -- no step outlasted it, the stalls brought it due. A slow machine (a step of ~1 s), not a
race: timing_sensitive, never a plain failure (anyio's fail_after in sse-starlette's suite, 14 reds
at first contact).
"""

import asyncio

import pytest


@pytest.mark.asyncio
async def test_a_short_wait_well_within_its_timeout() -> None:
    background = asyncio.ensure_future(asyncio.sleep(5))  # a long timer pending: a keep-alive, a poll
    try:
        async with asyncio.timeout(1.0):
            for _ in range(5):
                await asyncio.sleep(0)
            await asyncio.sleep(0.05)
    finally:
        background.cancel()
