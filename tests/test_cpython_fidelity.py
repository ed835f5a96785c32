"""Faithful to CPython's asyncio, judged by CPython's own tests (issue 31).

The divergences CPython's test_asyncio showed, each in tests/cases/case_cpython_divergences.py and
compared with plain pytest (the reference): a SIGCHLD handler that wakes a waiting task, with and
without a pending timer, and a SIGALRM one; the type of asyncio.all_tasks(); the loop's _ready and _scheduled. Then the
fast subset of bench/cpython_asyncio.py (which `make bench` runs on every module): the interpreter's
own test_locks, test_queues, test_waitfor and test_timeouts, run in place for every Python 3.10-3.13
this machine has, under zero delays: no test that passes plainly fails, and each one either passes
or is named as not explored with the reason (a test that builds its own loop).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import CASES, REPO, engine_json
from test_cannot_lie import ZERO_TOKEN, assert_passes_plainly, engine_docs
from test_versions import INTERPRETERS

sys.path.insert(0, str(REPO / "bench"))
import cpython_asyncio  # noqa: E402  (the bench's own rows: one way to run and count them)

DIVERGENCES = f"{CASES}/case_cpython_divergences.py"
SUBSET = ["test_locks", "test_queues", "test_waitfor", "test_timeouts"]
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"


def test_the_divergences_pass_plainly_under_zero_delays_and_explored() -> None:
    assert_passes_plainly(REPO, DIVERGENCES, passed=6)
    _, docs = engine_docs("explore", DIVERGENCES, "--strategy", "zero", "--runs", "1")
    assert {d["nodeid"].split("::")[-1]: d["outcome"] for d in docs} == {
        "test_a_child_exit_wakes_its_waiter_through_sigchld": "pass",
        "test_a_child_exit_wakes_its_waiter_through_sigchld_under_a_timeout": "pass",
        "test_an_interval_timer_signal_wakes_its_waiter": "pass",
        "test_all_tasks_is_a_set": "pass",
        "test_ready_and_scheduled_show_what_is_queued": "pass",
        "test_background_tasks_cancelled_by_walking_their_set": "pass",
    }, docs
    _, docs = engine_docs("explore", DIVERGENCES, "--runs", "10")
    assert [(d["nodeid"], d["found"]) for d in docs if d["found"]] == [], docs


@pytest.mark.parametrize("name", ["test_all_tasks_is_a_set", "test_background_tasks_cancelled_by_walking_their_set"])
def test_a_set_of_tasks_walks_alike_in_every_replay(name: str) -> None:
    """A set of tasks iterates by the tasks' hashes, which were their addresses: different in two
    workers, so a replay in each walked a program's set of tasks (all_tasks(), its own) in another
    order, step for step another trace. In a controlled run a task hashes by its number in the run:
    every replay of the zero schedule, in either worker, runs the same steps."""
    _, data = engine_json("replay", ZERO_TOKEN, f"{DIVERGENCES}::{name}", "-n", "8", expect=0)
    assert data["outcomes"]["pass"] == 8 and data["identical_traces"] is True, data


def test_cpythons_own_sleep_races_are_timing_sensitive(tmp_path: Path) -> None:
    """CPython's own tests live in the standard library's directory, which is library code to the
    recorder, so their sleeps had no site and a stall that made a 10 s sleep overtake a 0.1 s one
    was a plain failure (test_taskgroup_14 and 19, test_uncancel_basic under explore=30). The
    collected tests' directories are the user's code wherever they are: the same search now names
    the 10 s sleep and calls it timing_sensitive (3.11, the baseline every machine here has)."""
    bin_dir = Path(cpython_asyncio.venv_bin("3.11"))
    path = cpython_asyncio.module_path("3.11", "test_taskgroups")
    proc = subprocess.run([str(bin_dir / "affidavit"), "explore", f"{path}::TestTaskGroup::test_taskgroup_19",
                           "--runs", "30", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=cpython_asyncio.environment())
    doc = json.loads(proc.stdout)
    assert doc["found"] and doc["verdict"] == "timing_sensitive", doc
    assert doc["timing"]["site"].startswith("test/test_asyncio/test_taskgroups.py:"), doc["timing"]
    assert doc["timing"]["duration_us"] == 10_000_000, doc["timing"]


def _rows(minor: str, tmp_path: Path) -> None:
    rows = [cpython_asyncio.row(minor, module, 0, cwd=str(tmp_path)) for module in SUBSET]
    present = [r for r in rows if "absent" not in r]
    # some modules' tests all build their own loop (3.10's test_queues): not all of them can
    assert present and sum(r["zero_pass"] for r in present) > 0, rows
    for r in present:
        assert r["zero_red"] == [] and r["missing"] == [], r
        # every test that passes plainly passed under zero delays or was named as not explored
        assert r["zero_pass"] + r["zero_skip"] + sum(r["not_explored"].values()) == r["passed_plain"], r


def test_cpython_asyncio_subset_under_zero_delays_here(tmp_path: Path) -> None:
    _rows(HERE, tmp_path)


@pytest.mark.plain_build
@pytest.mark.parametrize("minor", sorted(m for m in INTERPRETERS if m != HERE))
def test_cpython_asyncio_subset_under_zero_delays(minor: str, tmp_path: Path) -> None:
    _rows(minor, tmp_path)
