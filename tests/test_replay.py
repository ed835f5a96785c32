"""@affidavit.replay: the regression test replays the failing schedule, fails on the bug, passes on
the fix, and refuses to pass vacuously when the delayed step is never reached."""

from __future__ import annotations

import subprocess
import sys

import pytest

import affidavit
from helpers import REPO


def outcomes() -> dict:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
                           "tests/cases/case_replay.py"], cwd=REPO, capture_output=True, text=True, timeout=120)
    result = {"_out": ("", proc.stdout)}
    for line in proc.stdout.splitlines():
        for word in ("PASSED", "FAILED"):
            if line.startswith(word + " "):
                name = line.split("::")[1].split(" ")[0]
                result[name] = (word, line)
    return result


def test_replay_marks_the_bug_and_the_fix() -> None:
    got = outcomes()
    assert got["test_buggy_under_the_failing_token"][0] == "FAILED"
    assert "AssertionError: read before the write" in got["_out"][1]
    assert got["test_fixed_under_the_failing_token"][0] == "PASSED"
    assert got["test_buggy_just_under_the_window"][0] == "PASSED"
    assert got["test_vacuous_token"][0] == "FAILED"
    assert "delayed step never ran (nobody#0, step 3)" in got["_out"][1]
    assert got["test_fixtures_still_arrive"][0] == "PASSED"


def test_replay_refuses_bad_tokens_and_sync_tests() -> None:
    with pytest.raises(ValueError):
        affidavit.replay("afd1:notatoken")
    with pytest.raises(TypeError):
        affidavit.replay("afd1:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaacbvibx4")(lambda: None)  # type: ignore[arg-type]
