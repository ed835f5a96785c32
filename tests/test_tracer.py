"""The line tracer, in-process: which lines of user code each step runs, on which object.

Off unless asked for (configure(..., trace_lines=True)); on, it records a LINE event per line of
user code (never the standard library or site-packages) with the frame's receiver, and for lines
that reach into a local variable, which object that variable holds.
"""

from __future__ import annotations

import asyncio
from typing import Any, List, Tuple

import pytest

import affidavit
from affidavit import _runtime
from affidavit.loop import ControlledLoop

# in-process runs: under pytest-xdist, only in a child with no execnet thread beside them
pytestmark = pytest.mark.one_thread


def run(program: Any, trace: bool) -> None:
    affidavit.install()
    _runtime.configure(_runtime.MODE_CONTROLLED, "", 0, trace)
    _runtime.recorder_begin(1 << 20)
    loop = ControlledLoop()
    try:
        loop.run_until_complete(program())
    finally:
        loop.close()


def lines() -> List[Tuple[str, int, int]]:
    """(task, line, receiver number) of every LINE event of this file."""
    return [(label.rsplit(".", 1)[-1], line, recv) for kind, label, path, line, _f, recv in _runtime.events()
            if kind == _runtime.EV_LINE and path.endswith("test_tracer.py")]


class Store:
    def __init__(self) -> None:
        self.sessions: dict = {}

    async def add(self, key: str) -> None:
        sessions = self.sessions
        await asyncio.sleep(0)
        sessions[key] = 1


async def two_stores() -> None:
    a, b = Store(), Store()
    await asyncio.gather(a.add("x"), b.add("y"))


def test_nothing_is_traced_unless_asked() -> None:
    run(two_stores, trace=False)
    assert lines() == []


def test_lines_of_user_code_with_their_receiver() -> None:
    run(two_stores, trace=True)
    got = lines()
    add_lines = [(t, ln, r) for t, ln, r in got if t.startswith("add#")]
    # each add runs its three lines, in two steps, each on its own Store
    by_task: dict = {}
    for t, ln, r in add_lines:
        by_task.setdefault(t, []).append((ln, r))
    assert sorted(by_task) == ["add#0", "add#1"]
    recv = {t: {r for _, r in v} for t, v in by_task.items()}
    assert all(len(r) == 1 and 0 not in r for r in recv.values()), recv
    assert recv["add#0"] != recv["add#1"], "two Store instances get two numbers"
    assert [ln for ln, _ in by_task["add#0"]] == [ln for ln, _ in by_task["add#1"]]
    assert len(by_task["add#0"]) == 3
    # no line of asyncio (stdlib) is recorded
    assert all(path.endswith(".py") and "asyncio" not in path
               for kind, _l, path, _ln, _f, _r in _runtime.events() if kind == _runtime.EV_LINE)


def test_a_local_variable_is_resolved_to_its_object() -> None:
    async def refresh(state: dict) -> None:
        await asyncio.sleep(0)
        state["token"] = "fresh"

    async def prog() -> None:
        state = {"token": "stale"}
        await refresh(state)

    run(prog, trace=True)
    local = [(name, line, obj) for kind, _l, name, line, _f, obj in _runtime.events() if kind == _runtime.EV_LOCAL]
    assert [name for name, _, _ in local] == ["state"]
    assert local[0][2] != 0
