"""Tests that write to one fixed path inside the test directory (shared across tests)."""
import asyncio
import json
import os
from pathlib import Path

import pytest

OUT = Path(__file__).resolve().parent / "_fc7_fixed_output.json"


@pytest.fixture(autouse=True)
def clean_output():
    if OUT.exists():
        OUT.unlink()
    yield
    if OUT.exists():
        OUT.unlink()


async def write_json_atomically(path, data):
    tmp = path.with_suffix(".tmp")
    await asyncio.to_thread(tmp.write_text, json.dumps(data))
    await asyncio.sleep(0.005)
    os.replace(tmp, path)


@pytest.mark.asyncio
async def test_write_then_read_back():
    await write_json_atomically(OUT, {"n": 1})
    assert json.loads(OUT.read_text()) == {"n": 1}


@pytest.mark.asyncio
async def test_file_absent_at_start():
    # the autouse fixture removed whatever a previous test wrote
    assert not OUT.exists()
    await write_json_atomically(OUT, {"n": 2})
    assert json.loads(OUT.read_text())["n"] == 2


@pytest.mark.asyncio
async def test_sequential_appends_from_tasks():
    lock = asyncio.Lock()
    OUT.write_text("[]")

    async def append(i):
        await asyncio.sleep(0.001 * (5 - i))
        async with lock:
            data = json.loads(OUT.read_text())
            await asyncio.sleep(0)
            data.append(i)
            OUT.write_text(json.dumps(data))

    await asyncio.gather(*(append(i) for i in range(5)))
    assert sorted(json.loads(OUT.read_text())) == [0, 1, 2, 3, 4]
