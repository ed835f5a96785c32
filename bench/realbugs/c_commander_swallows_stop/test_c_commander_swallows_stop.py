"""stop() returns, even right after a command timed out."""

import asyncio
import importlib

import pytest

EXPECTED = {
    "cause": "cancel_swallowed",
    "resource": ["Task@", "Commander#0._worker"],
    "await": "c_commander_swallows_stop_buggy.py:40",
    "fix": None,
    "tags": ["cancellation", "background_task"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"c_commander_swallows_stop_{request.param}")


@pytest.mark.asyncio
async def test_stop_after_command(lib) -> None:
    commander = lib.Commander()

    async def session() -> None:
        try:
            reply = await commander.send(b"FA;", timeout=0.002)
            assert reply == b"ACK FA;"
        except asyncio.TimeoutError:
            pass  # the radio did not answer in time; the session ends anyway
        await commander.stop()

    await session()
