"""The trivial async test the benchmark runs: the cost of a run is all overhead."""

import asyncio

import pytest


@pytest.mark.asyncio
async def test_trivial() -> None:
    await asyncio.sleep(0)
