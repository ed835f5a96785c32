"""Input for tests/test_cannot_lie.py: an async test with no asyncio mark, for a session run with
`-o asyncio_mode=auto` (without it pytest-asyncio does not run the test at all).

The examples' rare flake without its randomness: the refresh takes 1 ms and the test waits 50 ms,
so plain pytest passes it unless one step stalls for 49 ms; a schedule that delays the test's
first step that long makes it read the stale token (an order violation).
"""

import asyncio


async def refresh_token(state: dict) -> None:
    await asyncio.sleep(0.001)
    state["token"] = "fresh"


async def test_uses_fresh_token() -> None:
    state = {"token": "stale"}
    refresher = asyncio.create_task(refresh_token(state))
    await asyncio.sleep(0.05)  # "the refresh takes 1 ms; 50 ms is plenty"
    assert state["token"] == "fresh"
    await refresher
