"""Input for tests/test_cli.py: failures whose messages are awkward to carry through JSON."""

import asyncio

import pytest


@pytest.mark.asyncio
async def test_awkward_message() -> None:
    await asyncio.sleep(0)
    assert False, 'ünïcode "quoted" \\ back\ttab\x01ctl\nsecond line'


@pytest.mark.asyncio
async def test_surrogate_message() -> None:
    await asyncio.sleep(0)
    assert False, "lone surrogate \udcff in the message"
