"""Await chains: the user frames beneath a suspension or an access (AFD_EV_CHAIN), and the await a
cause names with them: the one in the function that holds the read and the write, with the chain
beneath it, rather than the innermost user await.

In-process tests read the recorder's events; the investigate tests run the engine on the programs
in tests/cases/case_chain_*.py, whose lines are found by their `# chain: NAME` markers.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any, Dict, List

import pytest

import affidavit
from affidavit import _runtime
from affidavit.loop import ControlledLoop

# in-process runs: under pytest-xdist, only in a child with no execnet thread beside them
pytestmark = pytest.mark.one_thread

from helpers import REPO, investigate

EV_CHAIN = 25
EV_STEP = 2
EV_OP_BEGIN = 4
HERE = Path(__file__).name


def marker(path: Path, name: str) -> int:
    """The line of `# chain: NAME` in path."""
    for no, text in enumerate(path.read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# chain: {name}"):
            return no
    raise AssertionError(f"no marker {name} in {path}")


def run(program: Any, trace: bool = False) -> List[tuple]:
    affidavit.install()
    _runtime.configure(_runtime.MODE_CONTROLLED, "", 0, trace)
    _runtime.recorder_begin(1 << 20)
    loop = ControlledLoop()
    try:
        loop.run_until_complete(program())
    finally:
        loop.close()
    return list(_runtime.events())


async def leaf() -> None:
    await asyncio.sleep(0.001)  # chain: leaf


async def middle() -> None:
    await leaf()  # chain: middle


def check_here() -> None:
    affidavit.access("COUNTER", "read")  # chain: access


async def outer() -> None:
    check_here()  # chain: calls-check
    await middle()  # chain: outer
    await asyncio.sleep(0)  # chain: flat


def chain_frames(text: str) -> List[str]:
    """Each frame "file:line function" with the file cut to its base name."""
    out = []
    for frame in text.split("\n"):
        place, function = frame.rsplit(" ", 1)
        path, line = place.rsplit(":", 1)
        out.append(f"{Path(path).name}:{line} {function}")
    return out


def test_a_suspension_through_three_user_frames_records_its_chain_once() -> None:
    events = run(outer)
    me = Path(__file__)
    steps = [i for i, e in enumerate(events) if e[0] == EV_STEP and e[1].startswith("outer")]
    assert len(steps) == 3, events
    first = steps[0]
    # the step that suspended in leaf() through middle(): STEP, then its CHAIN, outermost first
    assert events[first][3].endswith(f"{HERE}:{marker(me, 'leaf')}"), events[first]
    chain = events[first + 1]
    assert chain[0] == EV_CHAIN, events[first:first + 2]
    assert chain_frames(chain[2]) == [
        f"{HERE}:{marker(me, 'outer')} outer",
        f"{HERE}:{marker(me, 'middle')} middle",
        f"{HERE}:{marker(me, 'leaf')} leaf",
    ]
    assert chain[3] == 3
    # suspended in outer itself: one user frame, which is the STEP's own site, so no CHAIN
    second = steps[1]
    assert events[second][3].endswith(f"{HERE}:{marker(me, 'flat')}"), events[second]
    assert second + 1 == len(events) or events[second + 1][0] != EV_CHAIN, events[second:second + 2]


def test_an_access_in_a_helper_records_the_callers_frame() -> None:
    events = run(outer)
    me = Path(__file__)
    begin = [i for i, e in enumerate(events) if e[0] == EV_OP_BEGIN and e[3] == "COUNTER"]
    assert len(begin) == 1, events
    chain = events[begin[0] + 1]
    assert chain[0] == EV_CHAIN, events[begin[0]:begin[0] + 2]
    # affidavit.access itself is library code: the chain is the user's frames only
    assert chain_frames(chain[2]) == [
        f"{HERE}:{marker(me, 'calls-check')} outer",
        f"{HERE}:{marker(me, 'access')} check_here",
    ]


def test_a_traced_line_in_a_callee_records_its_chain() -> None:
    events = run(outer, trace=True)
    me = Path(__file__)
    leaf_line = marker(me, "leaf")
    at = [i for i, e in enumerate(events) if e[0] == _runtime.EV_LINE and e[3] == leaf_line]
    assert at, events
    chain = events[at[0] + 1]
    assert chain[0] == EV_CHAIN, events[at[0]:at[0] + 2]
    assert chain_frames(chain[2]) == [
        f"{HERE}:{marker(me, 'outer')} outer",
        f"{HERE}:{marker(me, 'middle')} middle",
        f"{HERE}:{leaf_line} leaf",
    ]
    # a line of outer itself (one user frame) has no chain
    flat = [i for i, e in enumerate(events) if e[0] == _runtime.EV_LINE and e[3] == marker(me, "flat")]
    assert flat and all(events[i + 1][0] != EV_CHAIN for i in flat), events


@contextlib.asynccontextmanager
async def opened() -> Any:
    check_here()  # chain: cm-access
    await leaf()  # chain: cm-enter
    yield 1


async def with_opened() -> None:
    async with opened():  # chain: with
        await asyncio.sleep(0)  # chain: cm-body


def test_an_asynccontextmanager_generator_is_part_of_the_chain() -> None:
    """contextlib's __aenter__ (library code) drives the generator through an async_generator_asend
    object: the suspension's chain goes through both into the generator's frames, and an access made
    in the generator has the `async with` line of its caller above it."""
    events = run(with_opened)
    me = Path(__file__)
    steps = [i for i, e in enumerate(events) if e[0] == EV_STEP and e[1].startswith("with_opened")]
    assert len(steps) >= 2, events
    first = steps[0]
    assert events[first][3].endswith(f"{HERE}:{marker(me, 'leaf')}"), events[first]
    chain = events[first + 1]
    assert chain[0] == EV_CHAIN, events[first:first + 2]
    assert chain_frames(chain[2]) == [
        f"{HERE}:{marker(me, 'with')} with_opened",
        f"{HERE}:{marker(me, 'cm-enter')} opened",
        f"{HERE}:{marker(me, 'leaf')} leaf",
    ]
    begin = [i for i, e in enumerate(events) if e[0] == EV_OP_BEGIN and e[3] == "COUNTER"]
    assert len(begin) == 1, events
    access = events[begin[0] + 1]
    assert access[0] == EV_CHAIN, events[begin[0]:begin[0] + 2]
    assert chain_frames(access[2]) == [
        f"{HERE}:{marker(me, 'with')} with_opened",
        f"{HERE}:{marker(me, 'cm-access')} opened",
        f"{HERE}:{marker(me, 'access')} check_here",
    ]
    # back in the body: one user frame, no chain
    body = steps[1]
    assert events[body][3].endswith(f"{HERE}:{marker(me, 'cm-body')}"), events[body]
    assert body + 1 == len(events) or events[body + 1][0] != EV_CHAIN, events[body:body + 2]


def cause_of(case: str, test: str) -> Dict[str, Any]:
    rc, data, err = investigate(f"tests/cases/{case}.py::{test}")
    assert rc == 1, err
    assert data["verdict"] == "reproduced", data
    assert data["cause"] is not None, data
    return data["cause"]


def test_the_await_named_is_in_the_function_that_reads_and_writes() -> None:
    case = REPO / "tests" / "cases" / "case_chain_deep.py"
    cause = cause_of("case_chain_deep", "test_concurrent_deposits")
    rel = "tests/cases/case_chain_deep.py"
    assert cause["kind"] == "lost_update", cause
    assert cause["resource"] == 'case_chain_deep.BALANCE["amount"]', cause
    # deposit's own `await save()`, not io()'s sleep three frames down
    assert cause["await_site"] == f"{rel}:{marker(case, 'named')}", cause
    assert cause["await_chain"] == [
        {"file": rel, "line": marker(case, "save"), "function": "save"},
        {"file": rel, "line": marker(case, "flush"), "function": "flush"},
        {"file": rel, "line": marker(case, "io"), "function": "io"},
    ], cause
    assert (f"yields at {rel}:{marker(case, 'named')} `await save()`, via save() at {rel}:{marker(case, 'save')}, "
            f"flush() at {rel}:{marker(case, 'flush')}, io() at {rel}:{marker(case, 'io')}, "
            in cause["summary"]), cause


def test_a_check_in_a_helper_is_paired_with_the_callers_write() -> None:
    case = REPO / "tests" / "cases" / "case_chain_helper.py"
    cause = cause_of("case_chain_helper", "test_one_slot_one_owner")
    rel = "tests/cases/case_chain_helper.py"
    assert cause["kind"] in ("check_then_act", "lost_update"), cause
    assert cause["resource"] == 'case_chain_helper.SLOTS["free"]', cause
    # the caller's await between the helper's check and the caller's write
    assert cause["await_site"] == f"{rel}:{marker(case, 'named')}", cause
    assert cause["await_chain"] == [{"file": rel, "line": marker(case, "backend"), "function": "backend"}], cause
    # both sides named: the read in has_room(), the write in reserve()
    ops = cause["operations"]
    assert ops[0]["access"] == "read" and ops[0]["line"] == marker(case, "check"), ops
    assert ops[-1]["access"] == "write" and ops[-1]["line"] == marker(case, "write"), ops
    assert f"reads it (in has_room() at {rel}:{marker(case, 'check')})" in cause["summary"], cause
    assert f"`await backend()`, via backend() at {rel}:{marker(case, 'backend')}, " in cause["summary"], cause
