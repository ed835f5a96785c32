"""Input for tests/test_cli.py: module state that a run mutates; each run must start fresh.

Both tests share the module's state. In one plain pytest session the second one to run sees the
first one's writes and fails; under affidavit every run is its own process, so neither ever does.
"""

import asyncio

import pytest

COUNTER = 0
STATE: dict = {}


async def _touch_module_state() -> None:
    global COUNTER
    assert COUNTER == 0, f"COUNTER leaked from another run: {COUNTER}"
    assert STATE == {}, f"STATE leaked from another run: {STATE}"
    await asyncio.sleep(0)
    COUNTER += 1
    STATE["runs"] = STATE.get("runs", 0) + 1
    await asyncio.sleep(0.001)
    assert COUNTER == 1 and STATE == {"runs": 1}


@pytest.mark.asyncio
async def test_fresh_module_state() -> None:
    await _touch_module_state()


@pytest.mark.asyncio
async def test_fresh_module_state_again() -> None:
    await _touch_module_state()
