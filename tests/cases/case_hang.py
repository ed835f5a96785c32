"""Input for tests/test_cli.py: tests that never finish."""

import asyncio

import pytest


@pytest.mark.asyncio
async def test_hang() -> None:
    await asyncio.sleep(0)
    await asyncio.Event().wait()  # nothing ever sets it: a deadlock, reported at once as a hang


@pytest.mark.asyncio
async def test_sleep_forever() -> None:
    await asyncio.sleep(0)
    await asyncio.sleep(3600)  # a timer far away: in natural runs, a hang the time budget ends


@pytest.mark.asyncio
async def test_busy_loop() -> None:
    await asyncio.sleep(0)
    while True:  # one step that never yields back to the loop
        pass
