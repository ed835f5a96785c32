"""Input for tests/test_cannot_lie.py, copied into a project of its own as test_resources.py:
tests that write a file next to themselves (then remove it) and read a resource they ship with.

Plain pytest leaves the project as it found it (but for its caches).
"""

import asyncio
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.mark.asyncio
async def test_appends_to_a_log_then_removes_it() -> None:
    log = HERE / "run.log"
    with open(log, "a") as f:
        f.write("start\n")
    await asyncio.sleep(0.01)
    with open(log, "a") as f:
        f.write("end\n")
    try:
        assert log.read_text() == "start\nend\n"
    finally:
        log.unlink()


@pytest.mark.asyncio
async def test_reads_its_resource() -> None:
    text = (HERE / "resource.txt").read_text()
    await asyncio.sleep(0)
    assert text.startswith("a resource this project ships")
