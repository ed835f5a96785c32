"""The systematic search (issue 21): every schedule with at most K delays, each delay swept across
the slots the loop measured.

Soundness: the FIFO-correct controls and the loop-fidelity cases pass every schedule with at most 2
delays, and the search says it exhausted both bounds.
Exactness: on the closed-form window (examples/test_window.py: reader#0's first step must cost
500 us or more) the failing schedule's delay is the analytic boundary to the nanosecond.
Determinism: one worker and two name the same schedule after the same number of runs. Coverage:
the text and JSON say what was run and whether the bound was exhausted, class pruning included.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pytest

from affidavit import _runtime
from helpers import CASES, engine, engine_json

CONTROLS = [
    f"{CASES}/case_fifo_correct.py::test_fifo_order",
    "bench/cases/test_control_fifo.py::test_fifo_order",
    "bench/cases/test_control_awaited.py::test_index_is_built",
    "bench/cases/test_control_locked.py::test_locked_deposits",
    "bench/peers_programs/test_soundness_call_soon.py::test_audit_sees_deposit",
    "bench/peers_programs/test_soundness_alternation.py::test_sleep0_alternates",
    "bench/peers_programs/test_soundness_awaited_writer.py::test_reader_awaits_writer",
]
FIDELITY = f"{CASES}/case_loop_fidelity.py"
FIDELITY_TESTS = [
    "test_call_later_returns_an_asyncio_timer_handle",
    "test_call_soon_returns_an_asyncio_handle",
    "test_timer_handles_order_and_compare_like_asyncio",
    "test_the_loop_and_policy_are_asyncio_types",
    "test_rate_limiter_lets_ten_through_in_about_a_second",
    "test_time_advances_across_sleep_zero",
]
# as tests/test_loop_fidelity.py runs them: a limiter standing still ends as a step limit, not a hang
RUN_LIMITS = ("--timeout", "20", "--max-steps", "200000")
WINDOW = "examples/test_window.py::test_reader_sees_write"
SYSTEMATIC = ("explore", "--strategy", "systematic")


def systematic(nodeid: str, *extra: str, expect: Optional[int], timeout: float = 600, **kw: Any) -> Dict[str, Any]:
    _, data = engine_json(SYSTEMATIC[0], nodeid, *SYSTEMATIC[1:], *extra, expect=expect, timeout=timeout, **kw)
    assert data["strategy"] == "systematic", data
    return data


def levels(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    return list(data["systematic"]["levels"])


@pytest.mark.parametrize("nodeid", CONTROLS)
def test_fifo_correct_controls_pass_every_schedule_with_two_delays(nodeid: str) -> None:
    data = systematic(nodeid, "--max-delays", "2", "--runs", "20000", expect=0)
    assert data["found"] is False and data["outcomes"]["fail"] == 0, data
    lv = levels(data)
    assert [l["delays"] for l in lv] == [0, 1, 2], lv
    assert all(l["exhausted"] for l in lv), lv
    # every run is a schedule or a measuring repeat of one, and each schedule passed
    assert data["runs"] == lv[2]["cum_schedules"] + sum(l["measure_runs"] for l in lv), data
    assert data["outcomes"]["pass"] == data["runs"], data


@pytest.mark.parametrize("name", FIDELITY_TESTS)
def test_fidelity_cases_pass_every_schedule_with_two_delays(name: str) -> None:
    data = systematic(f"{FIDELITY}::{name}", "--max-delays", "2", "--runs", "5000", *RUN_LIMITS, expect=0)
    lv = levels(data)
    assert data["found"] is False and data["outcomes"]["pass"] == data["runs"], data
    assert all(level["exhausted"] for level in lv), lv


def test_the_window_is_found_at_its_analytic_boundary() -> None:
    data = systematic(WINDOW, "--max-delays", "1", "--runs", "2000", expect=1)
    assert data["found"] is True and data["verdict"] == "failure", data
    delays = _runtime.token_delays(data["token"])
    assert len(delays) == 1, delays
    label, ordinal, cost = delays[0]
    assert (label, ordinal) == ("reader#0", 0), delays
    # the writer's 1 ms timer is armed one iteration after the reader's 1.5 ms one: the reader's
    # step must cost 500 us or more, measured from the floor to the nanosecond
    assert cost == 500_000, delays


def test_one_worker_and_two_name_the_same_schedule() -> None:
    one = systematic(WINDOW, "--max-delays", "2", "--runs", "2000", "--workers", "1", expect=1, workers=False)
    two = systematic(WINDOW, "--max-delays", "2", "--runs", "2000", "--workers", "2", expect=1)
    assert one["token"] == two["token"] and one["failing_run"] == two["failing_run"], (one, two)


def test_the_text_says_what_was_exhausted() -> None:
    proc = engine(*SYSTEMATIC[:1], CONTROLS[0], *SYSTEMATIC[1:], "--max-delays", "1", "--runs", "5000", timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "every schedule with at most 1 delay:" in proc.stdout and "exhausted" in proc.stdout, proc.stdout


def test_a_budget_cut_is_not_called_exhausted() -> None:
    data = systematic(f"{FIDELITY}::test_time_advances_across_sleep_zero", "--max-delays", "2", "--runs", "3",
                      expect=0)
    assert data["runs"] == 3 and data["systematic"]["budget_spent"] is True, data
    assert not any(l["exhausted"] for l in levels(data)[1:]), data
    proc = engine(*SYSTEMATIC[:1], f"{FIDELITY}::test_time_advances_across_sleep_zero", *SYSTEMATIC[1:],
                  "--max-delays", "2", "--runs", "3", timeout=120)
    assert "budget spent" in proc.stdout and "exhausted" not in proc.stdout.replace("not exhausted", ""), \
        proc.stdout


def test_class_pruning_is_said() -> None:
    data = systematic(CONTROLS[1], "--max-delays", "2", "--prune", "classes", "--runs", "5000", expect=0)
    assert data["systematic"]["pruning"] == "classes", data
    proc = engine(*SYSTEMATIC[:1], CONTROLS[1], *SYSTEMATIC[1:], "--max-delays", "2", "--prune", "classes",
                  "--runs", "5000", timeout=600)
    if any(l["pruned"] for l in levels(data)):
        assert "under class pruning" in proc.stdout, proc.stdout


@pytest.mark.parametrize("args, words", [
    (("--max-delays", "9"), "number of delays"),
    (("--prune", "everything"), "--prune classes"),
    (("--shard", "1/2"), "--shard"),
])
def test_bad_systematic_arguments_are_one_line_errors(args: tuple, words: str) -> None:
    proc = engine(*SYSTEMATIC[:1], CONTROLS[0], *SYSTEMATIC[1:], *args)
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_runs_with_threads_are_never_called_exhausted() -> None:
    """A run a thread steered proves nothing about the schedules not run: no bound is exhausted."""
    data = systematic("bench/cases/test_control_threads.py::test_threads_count", "--max-delays", "1",
                      "--runs", "200", expect=None)
    assert not any(l["exhausted"] for l in levels(data)), levels(data)
