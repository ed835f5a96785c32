"""A rare flake (well under 1% naturally): it fails only when one step is unusually long."""

import asyncio
import random
import time

import pytest



def warm_cache() -> None:
    """Now and then the cache is cold and warming it blocks for a few milliseconds."""
    if random.random() < 0.004:
        end = time.perf_counter() + 0.006
        while time.perf_counter() < end:
            pass


async def refresh_token(state: dict) -> None:
    await asyncio.sleep(0.001)
    state["token"] = "fresh"


@pytest.mark.asyncio
async def test_uses_fresh_token() -> None:
    state = {"token": "stale"}
    refresher = asyncio.create_task(refresh_token(state))
    warm_cache()
    await asyncio.sleep(0.005)  # "the refresh takes 1 ms; 5 ms is plenty"
    assert state["token"] == "fresh"
    await refresher
