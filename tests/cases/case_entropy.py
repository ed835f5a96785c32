"""Input for tests/test_investigate.py: a failure decided by unseeded entropy (os.urandom), which no
schedule controls: replay cannot be deterministic, so investigate must abstain."""

import asyncio
import os

import pytest


@pytest.mark.asyncio
async def test_coin() -> None:
    await asyncio.sleep(0)
    assert os.urandom(1)[0] < 128, "the coin came up tails"
