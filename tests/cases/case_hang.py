"""Input for tests/test_cli.py: tests that never finish."""

import asyncio
import os

import pytest


@pytest.mark.asyncio
async def test_hang() -> None:
    await asyncio.sleep(0)
    await asyncio.Event().wait()  # nothing ever sets it: a deadlock, reported at once as a hang


@pytest.mark.asyncio
async def test_sleep_forever() -> None:
    if os.environ.get("AFD_HANG_STARTED"):  # a run has begun: the interrupt tests wait for it
        open(os.path.join(os.environ["AFD_HANG_STARTED"], f"run-{os.getpid()}"), "w").close()
    await asyncio.sleep(0)
    await asyncio.sleep(3600)  # a timer far away: in natural runs, a hang the time budget ends


@pytest.mark.asyncio
async def test_busy_loop() -> None:
    await asyncio.sleep(0)
    while True:  # one step that never yields back to the loop
        pass
