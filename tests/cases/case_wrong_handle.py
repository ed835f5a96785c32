"""An order violation where the smallest fix is wrong: the test's last handle to refresh_token is
the task that writes nothing, so awaiting it (AWAIT_TASK, one line) does not order the read after
the write, and verification refuses it; the larger EVENT_GATE does, and is proposed."""

import asyncio
import random

import pytest

TOKEN = {"value": "stale"}


async def refresh_token(write: bool, delay: float) -> None:
    await asyncio.sleep(delay)
    if write:
        TOKEN["value"] = "fresh"


@pytest.mark.asyncio
async def test_uses_fresh_token() -> None:
    TOKEN["value"] = "stale"
    writer = asyncio.create_task(refresh_token(True, random.uniform(0, 0.002)))
    other = asyncio.create_task(refresh_token(False, 0))
    await asyncio.sleep(0.001)
    assert TOKEN["value"] == "fresh"
    await asyncio.gather(writer, other)
