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
from typing import Any, Dict

import pytest

from helpers import CASES, engine_json

CASE = f"{CASES}/case_templates.py"
RUNS = 6


def sample(name: str, env: Dict[str, str]) -> Dict[str, Any]:
    _, data = engine_json("sample", f"{CASE}::{name}", "-n", str(RUNS), expect=None, env=env, timeout=120)
    assert data["runs"] == RUNS, data
    return data


@pytest.mark.parametrize("name", [
    "test_probe_made_in_the_template",
    "test_probe_a_clock_read_is_made_in_each_run",
    "test_probe_a_temp_dir_is_made_in_each_run",
    "test_probe_nothing_after_tmp_path_is_made_in_advance",
])
def test_what_a_template_makes_and_what_each_run_makes(name: str) -> None:
    assert sample(name, {})["failed"] == 0


def test_without_templates_every_fixture_is_made_in_its_run() -> None:
    """The probe's counterpart: AFFIDAVIT_NO_TEMPLATES=1 (what the benchmark compares with)."""
    assert sample("test_probe_made_in_the_template", {"AFFIDAVIT_NO_TEMPLATES": "1"})["failed"] == RUNS


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
