"""Templates (python/affidavit/templates.py, forkserver.c): a test's plain fixtures made once in a
process its runs fork from. What must hold: the fixtures that qualify are made there and nowhere
else (the probes: a fixture made in the template has another process id than the run); what does
not qualify is made in each run (a fixture that read the clock or left a temporary directory, and
everything after tmp_path); each run gets fresh copies and tears all its fixtures down, in pytest's
order, in its own process; a run's result is the same as without templates. The inputs are
tests/cases/case_templates.py."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import pytest

from helpers import CASES, engine_json

CASE = f"{CASES}/case_templates.py"
RUNS = 6


def sample(name: str, env: Dict[str, str], workers: int = 2) -> Dict[str, Any]:
    _, data = engine_json("sample", f"{CASE}::{name}", "-n", str(RUNS), "--workers", str(workers), expect=None,
                          env=env, timeout=120, workers=False)
    assert data["runs"] == RUNS, data
    return data


def made_where(tmp_path: Path, name: str, env: Dict[str, str]) -> List[str]:
    """Where each run's probed fixture was made ("template" or "run"), one worker, in run order."""
    assert sample(name, {"AFD_TEMPLATE_CASE_OUT": str(tmp_path), **env}, workers=1)["failed"] == 0
    return [line for p in sorted(tmp_path.iterdir(), key=lambda p: p.stat().st_mtime_ns)
            for line in p.read_text().split()]


def test_a_tests_fixtures_are_made_in_its_template_from_its_second_run(tmp_path: Path) -> None:
    """The first run of a test goes from the worker (a test explored in one run pays for no
    template); the others fork from the template, where the fixture was made."""
    assert made_where(tmp_path, "test_probe_made_in_the_template", {}) == ["run"] + ["template"] * (RUNS - 1)


@pytest.mark.parametrize("name", [
    "test_probe_a_clock_read_is_made_in_each_run",
    "test_probe_a_temp_dir_is_made_in_each_run",
    "test_probe_nothing_after_tmp_path_is_made_in_advance",
])
def test_what_a_template_declines_each_run_makes(tmp_path: Path, name: str) -> None:
    assert made_where(tmp_path, name, {}) == ["run"] * RUNS


def test_without_templates_every_fixture_is_made_in_its_run(tmp_path: Path) -> None:
    """AFFIDAVIT_NO_TEMPLATES=1: what the benchmark compares with."""
    assert made_where(tmp_path, "test_probe_made_in_the_template", {"AFFIDAVIT_NO_TEMPLATES": "1"}) == ["run"] * RUNS


def test_no_temporary_directory_is_left_by_a_declined_template(tmp_path: Path) -> None:
    before = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("afd-template-case-")}
    assert sample("test_probe_a_temp_dir_is_made_in_each_run", {})["failed"] == 0
    after = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("afd-template-case-")}
    assert after <= before, after - before


@pytest.mark.parametrize("templates", ["1", ""])
def test_each_run_tears_down_its_own_fixtures_in_pytests_order(tmp_path: Path, templates: str) -> None:
    env = {"AFD_TEMPLATE_CASE_OUT": str(tmp_path)} | ({} if templates else {"AFFIDAVIT_NO_TEMPLATES": "1"})
    assert sample("test_each_run_gets_fresh_fixtures_torn_down_in_order", env)["failed"] == 0
    notes = sorted(p.read_text() for p in tmp_path.iterdir())
    assert notes == ["late\ninner\nouter\n"] * RUNS, notes
