"""An order violation two fixes can repair: the test holds the writer's task (AWAIT_TASK, one line)
and the state is module state of this file (EVENT_GATE, several lines). The smaller is proposed."""

import asyncio
import random

import pytest

TOKEN = {"value": "stale"}


async def refresh_token() -> None:
    await asyncio.sleep(random.uniform(0, 0.002))
    TOKEN["value"] = "fresh"


@pytest.mark.asyncio
async def test_uses_fresh_token() -> None:
    TOKEN["value"] = "stale"
    refresher = asyncio.create_task(refresh_token())
    await asyncio.sleep(0.001)
    assert TOKEN["value"] == "fresh"
    await refresher
