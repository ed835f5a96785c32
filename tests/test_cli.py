"""Integration tests of the `affidavit` CLI: sample, explore and replay, end to end.

Every call goes through a subprocess with a timeout, from the repository root (node ids are
relative to it). The inputs are the six flaky examples and the small files in tests/cases/, which
are named case_*.py so that the project's own pytest run never collects them; pytest still collects
a file named explicitly in a node id, which is how affidavit's worker is given them.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any, Dict, List

import pytest

from helpers import AFFIDAVIT, CASES, PYTHON, REPO, WORKERS, describe, engine, engine_env, engine_json

# The zero schedule with seed 0: what explore uses for its first run.
ZERO_TOKEN = "afd1:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaacbvibx4"
TOKEN_PREFIX = "afd1:"

EXAMPLES: List[str] = [
    "examples/test_lost_update.py::test_concurrent_deposits",
    "examples/test_taskgroup_read.py::test_report_is_finalized",
    "examples/test_event_flag.py::test_send_after_open",
    "examples/test_queue_drain.py::test_consumer_gets_everything",
    "examples/test_rare_flake.py::test_uses_fresh_token",
    "examples/test_annotated.py::test_report_is_finalized",
]
LOST_UPDATE = EXAMPLES[0]
EVENT_FLAG = EXAMPLES[2]
RARE_FLAKE = EXAMPLES[4]
PASSING = f"{CASES}/case_pass.py::test_always_passes"

OUTCOME_KEYS = {"pass", "fail", "error", "skip", "hang", "crash", "step-limit"}
FAILING_OUTCOMES = ("fail", "error", "hang", "crash")

# ---- helpers ----


def explore_token(nodeid: str, *extra: str) -> str:
    """A failing token for nodeid, found by explore."""
    _, data = engine_json("explore", nodeid, *extra, expect=1)
    assert data["found"] is True, data
    token = data["token"]
    assert isinstance(token, str) and token.startswith(TOKEN_PREFIX), data
    return token


def assert_usage_error(proc: "subprocess.CompletedProcess[str]", *words: str) -> str:
    """Exit 2, nothing on stdout, and one 'affidavit: error:' line (the first on stderr) that
    contains every word (case-insensitively). Returns that line."""
    assert proc.returncode == 2, describe(proc)
    assert proc.stdout == "", f"a usage error must print nothing on stdout\n{describe(proc)}"
    lines = proc.stderr.splitlines()
    assert lines, f"a usage error must say why on stderr\n{describe(proc)}"
    first = lines[0]
    assert first.startswith("affidavit: error: "), describe(proc)
    assert len(first) > len("affidavit: error: "), describe(proc)
    assert sum("affidavit: error:" in line for line in lines) == 1, describe(proc)
    for word in words:
        assert word.lower() in first.lower(), f"{word!r} missing from the error line\n{describe(proc)}"
    return first


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_outcomes(data: Dict[str, Any]) -> Dict[str, int]:
    outcomes = data["outcomes"]
    assert isinstance(outcomes, dict) and set(outcomes) == OUTCOME_KEYS, data
    assert all(type(v) is int and v >= 0 for v in outcomes.values()), data
    assert sum(outcomes.values()) == data["runs"], data
    return outcomes


def check_failed_count(data: Dict[str, Any]) -> None:
    """'failed' counts exactly the runs that failed, errored, hung or crashed."""
    outcomes = check_outcomes(data)
    assert data["failed"] == sum(outcomes[k] for k in FAILING_OUTCOMES), data


def flip(token: str, index: int) -> str:
    """token with the base32 character at index (after the prefix) replaced by another value."""
    body = list(token[len(TOKEN_PREFIX) :])
    body[index] = "b" if body[index].lower() == "a" else "a"
    return TOKEN_PREFIX + "".join(body)


# ---- the case files are inputs, not tests ----


def test_project_pytest_does_not_collect_the_cases() -> None:
    proc = subprocess.run(
        [str(PYTHON), "-m", "pytest", "tests", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO, env=engine_env(), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, describe(proc)
    assert "tests/test_cli.py::" in proc.stdout, describe(proc)
    collected = proc.stdout.splitlines()
    assert not [line for line in collected if line.startswith("tests/cases/")], describe(proc)


def test_isolation_case_detects_shared_module_state() -> None:
    """Sanity check of the isolation case: in one plain pytest process, the second test sees the
    first one's writes, so an affidavit run that passes really did start fresh."""
    proc = subprocess.run(
        [str(PYTHON), "-m", "pytest", f"{CASES}/case_isolation.py", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=REPO, env=engine_env(), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 1, describe(proc)
    assert "1 failed, 1 passed" in proc.stdout, describe(proc)
    assert "leaked from another run" in proc.stdout, describe(proc)


@pytest.mark.parametrize("test,failed,text", [
    ("test_warning_is_an_error", 3, "DeprecationWarning: old api"),
    ("test_warning_is_only_a_warning", 0, ""),
    ("test_strict_xfail_added_by_a_fixture", 3, "XPASS(strict)"),
])
def test_runs_give_pytests_verdict(test: str, failed: int, text: str) -> None:
    """A filterwarnings mark takes effect through a pytest_runtest_protocol wrapper (the warnings
    plugin), a strict xfail mark through the report of a phase that passed, even when a fixture
    adds the mark: affidavit's runs give the verdict plain pytest gives."""
    node = f"{CASES}/case_protocol.py::{test}"
    plain = subprocess.run([str(PYTHON), "-m", "pytest", node, "-q", "-p", "no:cacheprovider"],
                           cwd=REPO, env=engine_env(), capture_output=True, text=True, timeout=120)
    assert plain.returncode == (1 if failed else 0), describe(plain)
    proc = subprocess.run([str(AFFIDAVIT), "sample", node, "-n", "3", "--json", *WORKERS],
                          cwd=REPO, env=engine_env(), capture_output=True, text=True, timeout=120)
    data = json.loads(proc.stdout)
    assert data["runs"] == 3 and data["failed"] == failed, describe(proc)
    assert text in data["failure"], describe(proc)


# ---- search: every example yields a failing token that replays 10/10 ----


@pytest.mark.parametrize("nodeid", EXAMPLES, ids=[n.split("/")[1].split(".py")[0] for n in EXAMPLES])
def test_explore_finds_a_token_that_replays(nodeid: str) -> None:
    _, found = engine_json("explore", nodeid, "--strategy", "portfolio", "--runs", "500", expect=1, timeout=180)
    assert found["found"] is True, found
    token = found["token"]
    assert isinstance(token, str) and token.startswith(TOKEN_PREFIX), found
    assert 1 <= found["runs"] <= 500, found
    assert isinstance(found["failing_run"], int) and 1 <= found["failing_run"] <= found["runs"], found
    assert found["outcome"] in FAILING_OUTCOMES, found
    assert found["failure"], found

    _, replayed = engine_json("replay", token, nodeid, "-n", "10", expect=1)
    assert replayed["runs"] == 10, replayed
    assert replayed["failed"] == 10, replayed
    assert replayed["identical_traces"] is True, replayed
    assert replayed["failure"] == found["failure"], "replay must reproduce the same failure"
    assert replayed["outcomes"][found["outcome"]] == 10, replayed


# ---- determinism ----


def test_failing_token_replays_20_of_20_with_identical_traces() -> None:
    token = explore_token(LOST_UPDATE, "--seed", "7")
    _, data = engine_json("replay", token, LOST_UPDATE, "-n", "20", expect=1)
    assert data["runs"] == 20 and data["failed"] == 20, data
    assert data["outcomes"]["fail"] == 20, data
    assert data["identical_traces"] is True, data
    assert isinstance(data["digest"], str) and len(data["digest"]) == 16, data
    assert data["uncontrolled"] == [], data


def test_zero_token_is_explores_first_schedule() -> None:
    """The hard-coded zero token below is the one explore's first (zero) run really uses."""
    _, data = engine_json("explore", EVENT_FLAG, "--strategy", "zero", "--runs", "1", expect=1)
    assert data["found"] is True and data["failing_run"] == 1, data
    assert data["token"] == ZERO_TOKEN, data
    assert data["schedule"] == "zero", data


def test_passing_token_replays_20_passes_with_identical_traces() -> None:
    _, explored = engine_json("explore", RARE_FLAKE, "--strategy", "zero", "--runs", "1", expect=0)
    assert explored["found"] is False and explored["runs"] == 1, explored
    assert explored["outcomes"]["pass"] == 1, explored

    _, data = engine_json("replay", ZERO_TOKEN, RARE_FLAKE, "-n", "20", expect=0)
    assert data["runs"] == 20 and data["failed"] == 0, data
    assert data["outcomes"]["pass"] == 20, data
    assert data["identical_traces"] is True, data
    assert data["schedule"] == "zero", data


def test_explore_with_a_seed_is_reproducible() -> None:
    """The same seed gives the same first failing schedule, whatever the number of workers."""
    _, first = engine_json("explore", LOST_UPDATE, "--seed", "7", expect=1)
    _, second = engine_json("explore", LOST_UPDATE, "--seed", "7", expect=1)
    one_worker = engine(*("explore", LOST_UPDATE, "--seed", "7", "--json", "--workers", "1"), workers=False)
    assert one_worker.returncode == 1, describe(one_worker)
    third = json.loads(one_worker.stdout)
    assert first["token"] == second["token"] == third["token"], (first, second, third)
    assert first["failing_run"] == second["failing_run"] == third["failing_run"], (first, second, third)


def test_token_tolerates_surrounding_whitespace_and_letter_case() -> None:
    token = explore_token(LOST_UPDATE, "--seed", "7")
    _, canonical = engine_json("replay", token, LOST_UPDATE, "-n", "2", expect=1)
    variant = f"  {TOKEN_PREFIX}{token[len(TOKEN_PREFIX):].upper()}\n"
    _, data = engine_json("replay", variant, LOST_UPDATE, "-n", "2", expect=1)
    assert data["failed"] == 2 and data["identical_traces"] is True, data
    assert data["digest"] == canonical["digest"], (data, canonical)


# ---- isolation ----


@pytest.mark.parametrize("test", ["test_fresh_module_state", "test_fresh_module_state_again"])
def test_every_run_starts_with_fresh_module_state(test: str) -> None:
    _, data = engine_json("sample", f"{CASES}/case_isolation.py::{test}", "-n", "20", expect=0)
    assert data["runs"] == 20, data
    assert data["failed"] == 0, data
    assert data["outcomes"]["pass"] == 20, data


@pytest.mark.parametrize("text, value", [("08", 8), ("010", 10)])
def test_run_counts_are_decimal(text: str, value: int) -> None:
    """A count with a leading zero is either refused or read as decimal, never as octal."""
    proc = engine("sample", PASSING, "-n", text, "--json")
    if proc.returncode == 2:
        assert_usage_error(proc, "-n")
        return
    assert proc.returncode == 0, describe(proc)
    assert json.loads(proc.stdout)["runs"] == value, f"-n {text} must mean {value} runs\n{describe(proc)}"


def test_no_arguments_prints_usage_and_exits_2() -> None:
    proc = engine(workers=False)
    assert proc.returncode == 2, describe(proc)
    assert proc.stdout == "", describe(proc)
    assert proc.stderr.startswith("usage: affidavit"), describe(proc)


def test_help_prints_usage_on_stdout() -> None:
    proc = engine("--help", workers=False)
    assert proc.returncode == 0, describe(proc)
    for word in ("sample NODEID", "explore NODEID", "replay TOKEN NODEID", "exit codes"):
        assert word in proc.stdout, describe(proc)


# ---- JSON contract ----


def test_sample_json_contract() -> None:
    proc, data = engine_json("sample", LOST_UPDATE, "-n", "10", expect=None)
    assert data["nodeid"] == LOST_UPDATE, data
    assert type(data["runs"]) is int and data["runs"] == 10, data
    assert type(data["failed"]) is int and 0 <= data["failed"] <= 10, data
    assert proc.returncode == (1 if data["failed"] else 0), describe(proc)
    assert is_number(data["rate"]) and data["rate"] == pytest.approx(data["failed"] / 10), data
    ci = data["ci95"]
    assert isinstance(ci, list) and len(ci) == 2 and all(is_number(v) for v in ci), data
    assert 0 <= ci[0] <= data["rate"] <= ci[1] <= 1, data
    assert is_number(data["median_steps"]) and data["median_steps"] > 0, data
    assert is_number(data["median_wall_ms"]) and data["median_wall_ms"] > 0, data
    check_failed_count(data)
    assert isinstance(data["failure"], str), data
    assert bool(data["failure"]) == bool(data["failed"]), data


def test_explore_json_contract_when_found() -> None:
    _, data = engine_json("explore", LOST_UPDATE, "--runs", "50", expect=1)
    assert data["nodeid"] == LOST_UPDATE, data
    assert data["found"] is True, data
    assert isinstance(data["token"], str) and data["token"].startswith(TOKEN_PREFIX), data
    assert type(data["runs"]) is int and 1 <= data["runs"] <= 50, data
    assert isinstance(data["failure"], str) and "test_lost_update.py" in data["failure"], data
    assert data["outcome"] == "fail", data
    assert isinstance(data["schedule"], str) and data["schedule"], data
    assert type(data["failing_run"]) is int and 1 <= data["failing_run"] <= data["runs"], data
    assert check_outcomes(data)["fail"] >= 1, data


def test_explore_json_contract_when_not_found() -> None:
    _, data = engine_json("explore", PASSING, "--runs", "20", expect=0)
    assert data["found"] is False, data
    assert data["token"] is None and data["failure"] is None and data["failing_run"] is None, data
    assert data["runs"] == 20, data
    assert data["outcome"] == "pass", data
    assert isinstance(data["schedule"], str), data
    assert check_outcomes(data)["pass"] == 20, data


def test_replay_json_contract() -> None:
    _, data = engine_json("replay", ZERO_TOKEN, EVENT_FLAG, "-n", "3", expect=1)
    assert data["nodeid"] == EVENT_FLAG, data
    assert type(data["runs"]) is int and data["runs"] == 3, data
    assert type(data["failed"]) is int and data["failed"] == 3, data
    assert data["identical_traces"] is True, data
    assert isinstance(data["digest"], str) and int(data["digest"], 16) >= 0 and len(data["digest"]) == 16, data
    assert data["schedule"] == "zero", data
    assert isinstance(data["failure"], str) and "ConnectionError" in data["failure"], data
    check_failed_count(data)
    assert isinstance(data["uncontrolled"], list) and all(isinstance(u, str) for u in data["uncontrolled"]), data


def test_failure_text_survives_json_escaping() -> None:
    """Quotes, backslashes, tabs, control and non-ASCII characters come through JSON intact."""
    _, data = engine_json("sample", f"{CASES}/case_failure_text.py::test_awkward_message", "-n", "1", expect=1)
    assert data["outcomes"]["fail"] == 1, data
    assert 'ünïcode "quoted" \\ back\ttab\x01ctl' in data["failure"], data


def test_failure_message_that_is_not_utf8_encodable() -> None:
    """A failing assert whose message holds a lone surrogate is still a failure of the test
    (outcome fail, AssertionError), not an internal error of affidavit."""
    _, data = engine_json("sample", f"{CASES}/case_failure_text.py::test_surrogate_message", "-n", "1", expect=1)
    assert data["outcomes"]["fail"] == 1, data
    assert "AssertionError" in data["failure"], data
    assert "internal" not in data["failure"], data


# ---- human output ----


def test_sample_human_output() -> None:
    proc = engine("sample", PASSING, "-n", "3")
    assert proc.returncode == 0, describe(proc)
    first = proc.stdout.splitlines()[0]
    assert first.startswith(PASSING), describe(proc)
    assert "3 natural runs" in first and "0 failed" in first, describe(proc)


def test_explore_human_output_gives_a_working_replay_command() -> None:
    proc = engine("explore", LOST_UPDATE, "--seed", "7")
    assert proc.returncode == 1, describe(proc)
    lines = [line.strip() for line in proc.stdout.splitlines()]
    token_lines = [line for line in lines if line.startswith("token:")]
    assert len(token_lines) == 1, describe(proc)
    token = token_lines[0].split()[1]
    assert token.startswith(TOKEN_PREFIX), describe(proc)
    replay_lines = [line for line in lines if "affidavit replay" in line]
    assert len(replay_lines) == 1, describe(proc)
    command = replay_lines[0][replay_lines[0].index("affidavit replay") :].split()
    assert command == ["affidavit", "replay", token, LOST_UPDATE], describe(proc)
    again = engine(*command[1:], "-n", "3")
    assert again.returncode == 1, describe(again)
    assert "3 failed" in again.stdout and "traces identical" in again.stdout, describe(again)


def test_explore_human_output_when_nothing_fails() -> None:
    proc = engine("explore", PASSING, "--runs", "5")
    assert proc.returncode == 0, describe(proc)
    assert "no failing schedule in 5 runs" in proc.stdout, describe(proc)
    assert "token:" not in proc.stdout, describe(proc)
