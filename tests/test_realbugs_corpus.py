"""The real-bugs corpus's structure (bench/realbugs/), checked without running the engine on it.

Every case has its four files, a write-up naming the real report's URL, a well-formed EXPECTED whose
await points at an `await` line of the case, and two variants exposing one API; the corpus meets
issue 20's tag minimums; `bench/realbugs.py --list` works. The runner's matching rules are checked on
made-up answers.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Set

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import realbugs  # noqa: E402

CASES = sorted(c["name"] for c in realbugs.discover(None))


def public_names(path: Path, alias: str) -> Set[str]:
    spec = importlib.util.spec_from_file_location(alias, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {n for n in vars(module) if not n.startswith("_")}


def test_corpus_has_cases() -> None:
    assert CASES, "bench/realbugs/ holds no case"


@pytest.mark.parametrize("name", CASES)
def test_case_structure(name: str) -> None:
    case = realbugs.load_case(name)
    assert case["problems"] == [], case["problems"]
    assert re.fullmatch(r"[a-z][a-z0-9_]*", name), name
    folder = REPO / "bench" / "realbugs" / name
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert re.search(r"https?://\S+", readme), f"{name}/README.md names no http(s) URL"
    test_src = (folder / f"test_{name}.py").read_text(encoding="utf-8")
    assert '"buggy"' in test_src and '"fixed"' in test_src, f"test_{name}.py does not run both variants"
    assert not re.search(r"\bimport affidavit|\bfrom affidavit\b", test_src), \
        f"test_{name}.py uses affidavit; the corpus's tests are plain"


@pytest.mark.parametrize("name", CASES)
def test_expected_await_is_an_await_line(name: str) -> None:
    expected = realbugs.load_case(name)["expected"]
    sites = [expected["await"]] if isinstance(expected["await"], str) else expected["await"]
    for site in sites:
        file, _, line = site.rpartition(":")
        path = REPO / "bench" / "realbugs" / name / os.path.basename(file)
        assert path.is_file(), f"{site}: no such file in the case"
        lines = path.read_text(encoding="utf-8").splitlines()
        assert 1 <= int(line) <= len(lines), f"{site}: past the end of the file"
        assert "await" in lines[int(line) - 1] or "async with" in lines[int(line) - 1], \
            f"{site} is not an await: {lines[int(line) - 1].strip()!r}"


@pytest.mark.parametrize("name", CASES)
def test_variants_expose_one_api(name: str) -> None:
    folder = REPO / "bench" / "realbugs" / name
    buggy = public_names(folder / f"{name}_buggy.py", f"_realbugs_{name}_buggy")
    fixed = public_names(folder / f"{name}_fixed.py", f"_realbugs_{name}_fixed")
    assert buggy == fixed, f"only buggy: {sorted(buggy - fixed)}, only fixed: {sorted(fixed - buggy)}"


def test_tag_minimums() -> None:
    """Fails until both halves of the corpus (corpus-a's and corpus-b's cases) are in one tree."""
    counts: Any = realbugs.tag_counts(realbugs.discover(None))
    assert len(CASES) >= realbugs.MIN_CASES, (len(CASES), counts)
    for tag, least in realbugs.MIN_TAGS.items():
        assert counts[tag] >= least, (tag, counts[tag], least)


def test_list_prints_every_case() -> None:
    out = subprocess.run([sys.executable, str(REPO / "bench" / "realbugs.py"), "--list"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    listed = {line.split(":", 1)[0] for line in out.stdout.splitlines() if not line.startswith((" ", "\t"))}
    assert set(CASES) <= listed, set(CASES) - listed
    assert "problem:" not in out.stdout, out.stdout


def test_only_matching_nothing_is_a_usage_error() -> None:
    out = subprocess.run([sys.executable, str(REPO / "bench" / "realbugs.py"), "--list", "--only", "no-such-case-x"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, (out.returncode, out.stdout)
    assert "no case" in out.stderr and out.stderr.count("\n") == 1, out.stderr


def test_await_match_is_per_line() -> None:
    site = "bench/realbugs/x/x_buggy.py:41"
    assert realbugs.await_matches("x_buggy.py:41", site)
    assert realbugs.await_matches(["y.py:3", "x_buggy.py:41"], site)
    assert not realbugs.await_matches("x_buggy.py:4", site)
    assert not realbugs.await_matches("buggy.py:41", site)
    assert not realbugs.await_matches("x_buggy.py:41", None)


def test_malformed_expected_is_named() -> None:
    good = {"cause": "lost_wakeup", "resource": "Event@", "await": "a_buggy.py:3", "fix": None,
            "tags": ["handoff"]}
    assert realbugs.expected_problems(good) == []
    for bad in ({**good, "cause": "other"}, {**good, "fix": "SLEEP"}, {**good, "tags": ["flaky"]},
                {**good, "await": "a_buggy.py"}, {**good, "fixed": "reproduced"},
                {k: v for k, v in good.items() if k != "resource"}):
        assert realbugs.expected_problems(bad), bad


def test_fixed_race_and_threshold_are_judged() -> None:
    row = {"variant": "fixed", "expected": {"fixed": "timing_sensitive"}, "verdict": "timing_sensitive",
           "cause": None}
    realbugs.judge(row)
    assert row["fixed_ok"] and not row["fixed_as_race"]
    row = {"variant": "fixed", "expected": {}, "verdict": "timing_sensitive", "cause": None}
    realbugs.judge(row)
    assert not row["fixed_ok"] and not row["fixed_as_race"]
    row = {"variant": "fixed", "expected": {}, "verdict": "reproduced", "cause": {"kind": "lost_update"}}
    realbugs.judge(row)
    assert row["fixed_as_race"]
