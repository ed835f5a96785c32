"""Closure (src/lib/closure.h): explore ends after the zero schedule's measured run when that run
proves every schedule runs it, or runs only the schedules that outlast the test's deadlines
(timeouts, TTLs) when those are all a delay can move; and never closes a test a schedule can change.

Every claim is checked against the runs it skipped: the same test explored with --no-closure over
many schedules runs one order of events (within the deadlines, for the deadlines cases)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any, Dict

import pytest

from helpers import CASES, REPO, engine, engine_json
from test_plugin import pytest_run
from test_schema import assert_valid

CASE = f"{CASES}/case_closure.py"


def explore(name: str, *extra: str, runs: int = 30) -> Dict[str, Any]:
    _, data = engine_json("explore", f"{CASE}::{name}", "--runs", str(runs), *extra, expect=0, timeout=180)
    assert_valid("explore", data)
    assert data["found"] is False and data["outcomes"]["pass"] == data["runs"], data
    return data


def test_a_test_no_delay_can_change_ends_after_its_zero_run() -> None:
    data = explore("test_queue_handoff")
    c = data["closure"]
    assert c["state"] == "closed" and c["closed"] is True, c
    assert data["runs"] == 1 and c["measuring_runs"] == 1, data
    assert c["steps"] == c["measured_steps"] > 0 and c["deadline_steps"] == 0, c
    assert data["schedules"] == [0], data


def test_a_long_run_is_measured_window_by_window() -> None:
    data = explore("test_many_steps")
    c = data["closure"]
    assert c["state"] == "closed" and c["steps"] > 64, c
    assert data["runs"] == c["measuring_runs"] == math.ceil(c["steps"] / 64), data
    assert data["schedules"] == [0] * data["runs"], data


@pytest.mark.parametrize("name", ["test_guarded_by_timeouts", "test_ttl_left_pending"])
def test_deadlines_alone_leave_only_the_schedules_that_outlast_them(name: str) -> None:
    data = explore(name)
    c = data["closure"]
    assert c["state"] == "closed_below_deadlines" and c["closed"] is False, c
    assert c["deadline_steps"] > 0 and c["measured_steps"] == c["steps"], c
    # run 0, then the portfolio's schedules among the 30 that go beyond the deadlines
    assert data["schedules"][0] == 0 and all(i >= 16 for i in data["schedules"][1:]), data
    assert len(data["schedules"]) >= 2, data
    assert c["skipped_below_deadlines"] == 30 - data["runs"] > 0, data


@pytest.mark.parametrize("name,state", [("test_two_sleepers", "slot"), ("test_draws_random", "random"),
                                        ("test_reads_the_clock", "clock_read")])
def test_a_test_a_schedule_can_change_is_never_closed(name: str, state: str) -> None:
    data = explore(name)
    assert data["closure"]["state"] == state, data["closure"]
    assert data["runs"] == 30, data


@pytest.mark.parametrize("name,key", [("test_queue_handoff", "orders"), ("test_many_steps", "orders"),
                                      ("test_guarded_by_timeouts", "orders_within_deadlines"),
                                      ("test_ttl_left_pending", "orders_within_deadlines")])
def test_the_skipped_schedules_run_what_closure_said(name: str, key: str) -> None:
    """150 schedules of the portfolio and the systematic search, none skipped: one order of events
    (among the runs that outlasted no deadline, for the deadlines cases)."""
    data = explore(name, "--no-closure", runs=150)
    assert data["closure"] is None and data["runs"] == 150, data
    assert data[key] == 1, data


def test_the_text_says_what_was_proved_and_skipped() -> None:
    proc = engine("explore", f"{CASE}::test_queue_handoff", "--runs", "30", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "every schedule runs as the zero schedule, proved in 1 run (of 30)" in proc.stdout, proc.stdout
    assert "no loop.time() read follows one, nothing drawn from `random`" in proc.stdout, proc.stdout
    proc = engine("explore", f"{CASE}::test_guarded_by_timeouts", "--runs", "30", timeout=120)
    assert "every schedule that keeps the test's deadlines (timeouts, TTLs) runs as the zero schedule" in proc.stdout, \
        proc.stdout
    assert "schedules that outlast a deadline ran" in proc.stdout, proc.stdout


def test_the_table_marks_closed_tests() -> None:
    proc = engine("explore", CASE, "--runs", "20", timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {line.split()[-1]: line for line in proc.stdout.splitlines() if "case_closure.py::" in line and "  " in line}
    closed = [k for k, v in rows.items() if v.startswith("no failing (closed)")]
    assert sorted(closed) == [f"{CASE}::test_many_steps", f"{CASE}::test_queue_handoff"], proc.stdout


def test_racy_examples_are_found_as_without_closure() -> None:
    """On tests with a failing schedule closure changes nothing: the same run fails first."""
    for nodeid in ("examples/test_lost_update.py::test_concurrent_deposits", "examples/test_window.py::test_reader_sees_write"):
        _, with_closure = engine_json("explore", nodeid, "--runs", "60", expect=1, timeout=180)
        _, without = engine_json("explore", nodeid, "--runs", "60", "--no-closure", expect=1, timeout=180)
        assert with_closure["closure"]["state"] not in ("closed", "closed_below_deadlines"), with_closure
        assert (with_closure["failing_run"], with_closure["token"]) == (without["failing_run"], without["token"])


def test_no_closure_is_refused_outside_explore() -> None:
    proc = engine("sample", f"{CASE}::test_queue_handoff", "--no-closure", timeout=60)
    assert proc.returncode == 2 and "--no-closure applies to explore" in proc.stderr, proc.stderr


def test_the_plugin_counts_closed_tests(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(REPO / CASE, root / "test_closure_case.py")
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\nasyncio_default_fixture_loop_scope = "function"\n')
    rc, out = pytest_run(root, "--affidavit-explore=20", "-q")
    assert rc == 0, out
    assert "affidavit: 7 tests explored (2 closed: their zero schedule's run, measured, proved every schedule " \
           "runs it), 0 not explored" in out, out
