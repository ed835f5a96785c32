"""Inputs of tests/test_templates.py: fixtures a template makes once, and fixtures it must not.

The probes note whether a fixture was made in the process the test runs in, or in another (a
template, the run's parent), in the file AFD_TEMPLATE_CASE_OUT names. Every test passes under plain
pytest and must pass in every run, template or not.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any, Dict, Iterator, List

import pytest
import pytest_asyncio

torn: List[str] = []


def _note(what: str) -> None:
    """Where the test harness reads the teardowns of each run (one file per run's process)."""
    out = os.environ.get("AFD_TEMPLATE_CASE_OUT")
    if out:
        with open(os.path.join(out, str(os.getpid())), "a", encoding="utf-8") as f:
            f.write(what + "\n")


@pytest.fixture
def made_in() -> int:
    return os.getpid()


@pytest.fixture
def reads_the_clock() -> int:
    time.monotonic()
    return os.getpid()


@pytest.fixture
def leaves_a_temp_dir() -> Iterator[int]:
    path = tempfile.mkdtemp(prefix="afd-template-case-")
    yield os.getpid()
    os.rmdir(path)


def _probe(made_in: int) -> None:
    _note(f"{'template' if made_in != os.getpid() else 'run'}")


@pytest.mark.asyncio
async def test_probe_made_in_the_template(made_in: int) -> None:
    _probe(made_in)


@pytest.mark.asyncio
async def test_probe_a_clock_read_is_made_in_each_run(reads_the_clock: int) -> None:
    _probe(reads_the_clock)


@pytest.mark.asyncio
async def test_probe_a_temp_dir_is_made_in_each_run(leaves_a_temp_dir: int) -> None:
    _probe(leaves_a_temp_dir)


@pytest.mark.asyncio
async def test_probe_nothing_after_tmp_path_is_made_in_advance(tmp_path: Any, made_in: int) -> None:
    _probe(made_in)


@pytest.fixture
def outer() -> Iterator[Dict[str, bool]]:
    state = {"inner_down": False}
    yield state
    assert state["inner_down"], "the fixture made after it must be torn down first"
    torn.append("outer")
    _note("outer")


@pytest.fixture
def inner(outer: Dict[str, bool]) -> Iterator[List[int]]:
    items: List[int] = []
    yield items
    outer["inner_down"] = True
    torn.append("inner")
    _note("inner")


@pytest_asyncio.fixture
async def late(inner: List[int]) -> Any:
    yield len(inner)
    assert not torn, "a fixture made after the template's must be torn down before them"
    _note("late")


@pytest.mark.asyncio
async def test_each_run_gets_fresh_fixtures_torn_down_in_order(outer: Dict[str, bool], inner: List[int],
                                                                 late: int) -> None:
    assert inner == [] and late == 0 and torn == []
    inner.append(1)
