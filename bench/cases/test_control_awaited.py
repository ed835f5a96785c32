"""Control (race-free): the background write is awaited before the read.

The loader runs as a task, but the test awaits the task before it reads what the loader wrote,
so the read is ordered after the write under every schedule.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "no_failure", "cause": None}

INDEX: dict = {}


async def build_index() -> None:
    await asyncio.sleep(random.uniform(0, 0.003))  # scan the documents
    INDEX["terms"] = 42


@pytest.mark.asyncio
async def test_index_is_built() -> None:
    INDEX.clear()
    builder = asyncio.create_task(build_index())
    await asyncio.sleep(0.001)  # other start-up work meanwhile
    await builder
    assert INDEX["terms"] == 42
