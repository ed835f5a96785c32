"""A failure raised inside asyncio itself: a reply that arrives after its asyncio.timeout, so
the TimeoutError's innermost frame is asyncio's own timeouts.py."""

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
    async with asyncio.timeout(0.002):
        while "answer" not in box:
            await asyncio.sleep(0.0005)
    await task
