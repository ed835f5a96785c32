"""A failure raised inside asyncio itself: a reply that arrives after its asyncio.timeout, so
the TimeoutError's innermost frame is asyncio's own timeouts.py (tasks.py's wait_for on 3.10,
which has no asyncio.timeout)."""

import asyncio
import random

import pytest


async def reply(box: dict) -> None:
    await asyncio.sleep(random.uniform(0, 0.004))
    box["answer"] = 42


@pytest.mark.asyncio
async def test_reply_within_timeout() -> None:
    box: dict = {}
    task = asyncio.ensure_future(reply(box))
    if hasattr(asyncio, "timeout"):
        async with asyncio.timeout(0.002):
            await poll(box)
    else:
        await asyncio.wait_for(poll(box), 0.002)
    await task


async def poll(box: dict) -> None:
    while "answer" not in box:
        await asyncio.sleep(0.0005)
