"""Nothing silently skipped, nothing crashes the session (issue 30, item 7).

The options of a session that write its own output (pytest-cov's --cov, --junitxml, --basetemp,
given in the ini's addopts) never act in the engine's workers; a plugin's failure never ends the
session in an INTERNALERROR (anything in user_properties, an engine that prints nonsense); and
`affidavit explore` over tests of which none runs an asyncio loop says so and exits 0, each test
with its own failure when it has one. Small projects from tests/cases/, compared with plain pytest.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import matrix_env
from helpers import CASES, PYTHON, REPO, describe, engine

ADDOPTS = "--cov=. --cov-report=term --junitxml=junit.xml --basetemp=bt"


# pytest-cov 6 (pytest 8.4) and 7 (pytest 9.2): the two ways it has measured subprocesses
@pytest.mark.parametrize("name", ["pytest8.4-asyncio0.25", "pytest9.2-asyncio1.5"])
def test_session_output_options_never_act_in_workers(name: str, tmp_path: Path) -> None:
    py = matrix_env.venv(name)
    runs = {}
    for mode in ("plain", "explore"):
        root = tmp_path / mode
        root.mkdir()
        (root / "pytest.ini").write_text(f"[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = "
                                         f"function\naddopts = {ADDOPTS}\n")
        shutil.copy(REPO / CASES / "case_robust_output.py", root / "test_output.py")
        args = ["-p", "no:affidavit"] if mode == "plain" else ["--affidavit-explore=5"]
        runs[mode] = matrix_env.pytest_in(py, root, *args)
    plain, explore = runs["plain"], runs["explore"]
    said = f"plain:\n{plain.stdout}{plain.stderr}\nexplore:\n{explore.stdout}{explore.stderr}"
    assert "INTERNALERROR" not in said, said
    assert explore.returncode == plain.returncode == 0, said
    root = tmp_path / "explore"
    # the session's junit XML is the session's, with both tests; its coverage report is whole
    assert matrix_env.outcomes(root / "junit.xml") == matrix_env.outcomes(tmp_path / "plain" / "junit.xml"), said
    assert len(matrix_env.outcomes(root / "junit.xml")) == 2, said
    assert "test_output.py" in explore.stdout and "TOTAL" in explore.stdout, said
    # coverage measured the session's runs and none of the workers'; no worker left data behind
    seen = (root / "seen.txt").read_text().split("\n")
    assert "async session measured" in seen, seen
    worker = [line for line in seen if " worker " in line]
    assert worker and all(line.endswith(" unmeasured") for line in worker), seen
    assert sorted(p.name for p in root.glob(".coverage*")) == [".coverage"], list(root.iterdir())
    # --basetemp: the session's directory is still there, the plain run's file in it
    assert (root / "bt" / "test_async_under_coverage0" / "mine").exists(), said
    assert "affidavit: 1 test explored" in explore.stdout, said


def test_user_properties_that_are_not_pairs_are_no_internalerror(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    shutil.copy(REPO / CASES / "case_robust_properties.py", tmp_path / "test_props.py")
    plain = run_pytest(tmp_path, "-p", "no:affidavit")
    explore = run_pytest(tmp_path, "--affidavit-explore=5")
    assert plain.returncode == 0, describe(plain)
    assert explore.returncode == 0 and "INTERNALERROR" not in explore.stdout + explore.stderr, describe(explore)
    assert "affidavit: 1 test explored" in explore.stdout, describe(explore)


def run_pytest(cwd: Path, *args: str, env: Optional[Dict[str, str]] = None) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([str(PYTHON), "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          env=env or matrix_env.env(PYTHON), capture_output=True, text=True, timeout=120)


def test_an_unreadable_engine_answer_is_a_line_not_an_internalerror(tmp_path: Path) -> None:
    fake = tmp_path / "fake-affidavit"
    fake.write_text("#!/bin/sh\necho '{not json'\n")
    fake.chmod(0o755)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_red.py").write_text("def test_red():\n    assert 1 == 2\n")
    p = run_pytest(tmp_path, "--affidavit", env=dict(matrix_env.env(PYTHON), AFFIDAVIT_ENGINE=str(fake)))
    assert "INTERNALERROR" not in p.stdout + p.stderr, describe(p)
    assert p.returncode == 1, describe(p)
    assert "  not investigated: the engine printed no result it could read (exit 0)" in p.stdout, describe(p)


def test_explore_over_tests_none_explorable_says_so_and_exits_0() -> None:
    path = f"{CASES}/case_robust_no_loop.py"
    proc = engine("explore", path, "--runs", "3")
    assert proc.returncode == 0, describe(proc)
    assert "affidavit: none of the 2 tests could be explored: each ran no asyncio event loop affidavit controls" \
           in proc.stderr, describe(proc)
    # the failing one shows its own failure, not only that it ran no loop
    assert (f"{path}::test_fails_on_its_own ran no asyncio event loop, and failed on its own: "
            f"{path}:10: AssertionError: the test's own failure") in proc.stderr, describe(proc)
    assert "not explorable" in proc.stdout, describe(proc)
    # one such test named by its node id is still what the user asked for and could not get
    one = engine("explore", f"{path}::test_fails_on_its_own", "--runs", "3")
    assert one.returncode == 2 and "failed on its own" in one.stderr, describe(one)


@pytest.mark.parametrize("block", [["-p", "no:cacheprovider"], ["-pno:cacheprovider"]])
def test_a_blocked_cache_plugin_under_warnings_as_errors_is_explored(tmp_path: Path, block: List[str]) -> None:
    # the worker named its own cache directory with -o cache_dir, an unknown option once the cache
    # plugin is blocked: under filterwarnings = error every test was "not explored: no tests ran"
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = "
                                         "function\nfilterwarnings = error\n")
    (tmp_path / "test_it.py").write_text("import asyncio\n\n\nasync def test_it():\n    await asyncio.sleep(0)\n")
    for args in (["-p", "no:affidavit"], ["--affidavit-explore=5"]):
        proc = subprocess.run([str(PYTHON), "-m", "pytest", *block, *args], cwd=tmp_path, capture_output=True,
                              env=matrix_env.env(PYTHON), text=True, timeout=120)
        assert proc.returncode == 0 and "1 passed" in proc.stdout, describe(proc)
    assert "affidavit: 1 test explored" in proc.stdout and "not explored: no tests ran" not in proc.stdout, \
        describe(proc)
    assert not (tmp_path / ".pytest_cache").exists(), list(tmp_path.iterdir())
