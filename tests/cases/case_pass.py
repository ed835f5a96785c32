"""Input for tests/test_cli.py: an async test that passes under every schedule."""

import asyncio

import pytest


async def child(out: list, value: int) -> None:
    await asyncio.sleep(0.001)
    out.append(value)


@pytest.mark.asyncio
async def test_always_passes() -> None:
    out: list = []
    await asyncio.gather(child(out, 1), child(out, 2))
    assert sorted(out) == [1, 2]
