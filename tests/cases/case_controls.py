"""Input for tests/test_bounds.py: a failure message holding a NUL byte and terminal control
sequences (an OSC that would retitle the terminal, a CSI that would colour it)."""

import asyncio

import pytest

MESSAGE = "nul[\x00]osc[\x1b]0;PWNED\x07]csi[\x1b[31m]end"


@pytest.mark.asyncio
async def test_message_with_controls() -> None:
    await asyncio.sleep(0)
    assert False, MESSAGE
