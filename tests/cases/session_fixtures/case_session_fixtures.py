import asyncio
import os

import pytest


def note(kind: str, made_pid: int) -> None:
    """One file a run: this run's process and the process that made its fixture."""
    out = os.environ.get("SF_OUT")
    if out:
        with open(os.path.join(out, f"{kind}-{os.getpid()}-{made_pid}"), "w"):
            pass


@pytest.mark.asyncio
async def test_made_once(made_once) -> None:
    await asyncio.sleep(0)
    made_once["items"].append(1)  # each run has its own copy: no run sees another's
    assert made_once["items"] == [1]
    note("once", made_once["pid"])


@pytest.mark.asyncio
async def test_writes_the_project(writes_the_project) -> None:
    await asyncio.sleep(0)
    assert os.path.exists("made_by_fixture.txt")
    note("writes", writes_the_project)


@pytest.mark.asyncio
async def test_starts_a_thread(starts_a_thread) -> None:
    pid, requests, answers = starts_a_thread
    requests.put(21)
    assert await asyncio.to_thread(answers.get, timeout=5) == 42
    note("thread", pid)
