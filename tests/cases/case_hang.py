"""Input for tests/test_cli.py: tests that never finish."""

import asyncio

import pytest


@pytest.mark.asyncio
async def test_hang() -> None:
    await asyncio.sleep(0)
    await asyncio.Event().wait()  # nothing ever sets it


@pytest.mark.asyncio
async def test_busy_loop() -> None:
    await asyncio.sleep(0)
    while True:  # one step that never yields back to the loop
        pass
