"""Session-scoped fixtures are made once per worker, before its first fork, as pytest makes them
once per session (python/affidavit/session_fixtures.py) -- only those a fork copies faithfully.

A session fixture that loads a certificate store cost 100 ms in every run of aiosmtplib's suite
(137 ms a run where the fixtures pytest makes once take 40 ms). Each test below records, in every
run, its own process and the process that made its fixture: the in-memory one is made by the
worker (fewer makers than runs, none of them a run), with each run's changes to it its own; the
one that writes into the project and the one that starts a thread are made by every run itself,
as before, and the project holds no file of theirs afterwards. Plain pytest passes all three.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Set, Tuple

import pytest

from helpers import CASES, PYTHON, REPO, describe, engine

RUNS = 10


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(REPO / CASES / "session_fixtures", root)
    (root / "case_session_fixtures.py").rename(root / "test_session_fixtures.py")
    (root / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return root


def makers(out: Path, kind: str) -> Tuple[Set[str], Set[str]]:
    """The processes of the runs, and those that made their fixture."""
    runs, made = set(), set()
    for name in os.listdir(out):
        k, run, maker = name.split("-")
        if k == kind:
            runs.add(run)
            made.add(maker)
    return runs, made


@pytest.mark.parametrize("kind,test", [("once", "test_made_once"), ("writes", "test_writes_the_project"),
                                       ("thread", "test_starts_a_thread")])
def test_session_fixtures_made_once_only_when_a_fork_copies_them(tmp_path: Path, kind: str, test: str) -> None:
    root = project(tmp_path)
    plain = subprocess.run([str(PYTHON), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:affidavit"],
                           cwd=root, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0 and "3 passed" in plain.stdout, describe(plain)
    out = tmp_path / "out"
    out.mkdir()
    env: Dict[str, str] = {"SF_OUT": str(out)}
    proc = engine("sample", f"test_session_fixtures.py::{test}", "-n", str(RUNS), cwd=root, env=env, timeout=240)
    assert proc.returncode == 0 and f"{RUNS} natural runs, 0 failed" in proc.stdout, describe(proc)
    runs, made = makers(out, kind)
    assert len(runs) == RUNS, (runs, made)
    if kind == "once":
        assert not made & runs and len(made) < len(runs), \
            f"the in-memory session fixture was made by {made}, the runs were {runs}"
    else:
        assert made == runs, f"a {kind} fixture was made once for several runs: made by {made}, runs {runs}"
    assert not (root / "made_by_fixture.txt").exists(), sorted(p.name for p in root.iterdir())
