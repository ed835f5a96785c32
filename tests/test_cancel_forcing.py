"""Forcing evidence for a cancellation cause (src/engine/inv_force.c): the cancel moved one step
earlier and one step later, each by a schedule that differs from the minimal failing one in one
delay, replayed as many times as the failing schedule was, with the counts the rows state checked
against the runs the explain stage made.

tests/cases/case_cancel_forcing.py loses a pool's connection when its waiter is handed it and
cancelled by wait_for in the same loop iteration. The cancel one step earlier (the waiter's
timeout due before the test's sleep, by a cost on the step between their arming) finds a waiter
nobody handed anything; one step later (the failing delay just under its threshold, so the sleep
is due alone) the waiter resumes with the connection and no cancel is asked for. Both pass every
time: both rows are "confirmed". Without inv_force.c neither row exists (the first assertion).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Tuple

from helpers import investigate

NODE = "tests/cases/case_cancel_forcing.py::test_connection_comes_back"
ROW = re.compile(r"the cancel one step (earlier|later) \((before|after) (.+), (\S+) step (\d+)\): (.+)$")
COUNTS = re.compile(r"^(\d+)/(\d+) passed(, not all with one trace)?; one delay differs: (.+) "
                    r"\(schedule (\d+) of (\d+) tried\)")


def forcing_rows(data: Dict[str, Any]) -> List[Tuple[re.Match, Dict[str, str]]]:
    rows = []
    for ev in data["evidence"]:
        m = ROW.match(ev["claim"])
        if m:
            rows.append((m, ev))
    return rows


def stage_runs(data: Dict[str, Any], name: str) -> int:
    return next(s["runs"] for s in data["stages"] if s["name"] == name)


def test_the_cancel_moved_either_way_passes_every_replay() -> None:
    rc, data, err = investigate(NODE, "--natural", "20", "--workers", "1", workers=False, timeout=400)
    assert rc == 1 and data["verdict"] == "reproduced", data
    assert data["cause"]["kind"] == "cancelled_handoff", data["cause"]
    rows = forcing_rows(data)
    assert [m.group(1) for m, _ in rows] == ["earlier", "later"], data["evidence"]
    # after every other row: the forcing rows come last
    assert [ev for _, ev in rows] == data["evidence"][-2:], data["evidence"]
    (early, early_ev), (late, late_ev) = rows
    # the anchors: before the hand-off (the test's own step that releases), after the waiter's
    # step it was cancelled in
    assert early.group(3) == "the hand-off to its target" and early.group(4) == "test_connection_comes_back#0"
    assert late.group(3) == "the step of its target it was thrown into" and late.group(4) == "Pool.acquire#0"
    k = data["replay"]["runs"]
    assert k == 10 and data["replay"]["failed"] == k, data["replay"]
    replays = 0
    tried = set()
    for m, ev in rows:
        counts = COUNTS.match(ev["measured"])
        assert counts, ev
        passed, runs = int(counts.group(1)), int(counts.group(2))
        assert runs == k, ev  # replayed as many times as the failing schedule
        assert passed == runs and counts.group(3) is None, ev
        assert m.group(6) == "passes" and ev["strength"] == "confirmed", ev
        assert int(counts.group(5)) <= int(counts.group(6)), ev
        tried.add(int(counts.group(6)))
        replays += runs
    assert len(tried) == 1, rows  # one search served both directions
    # the moves differ from the failing schedule in one delay: earlier by a cost on the waiter's
    # arming step, later by the window's delay set to the cost the bisection found passing
    assert "impatient#0 step 0 given a cost of" in early_ev["measured"], early_ev
    w = data["window"]
    assert w and w["task"] == "Pool.acquire#0", w
    assert f"the delay of {w['task']} step {w['step']} changed from" in late_ev["measured"], late_ev
    assert "its target finished before any cancel of it was asked for" in late_ev["measured"], late_ev
    # every run the rows count was made by the explain stage, and nothing else it made is unsaid
    explain = stage_runs(data, "explain")
    assert explain == data["replay"]["runs"] + data["passing_replay"]["runs"] + tried.pop() + replays, (
        data["stages"], rows)
