"""The pytest plugin under every pytest and pytest-asyncio a suite may pin (issue 30, item 7): pytest
7.4, 8.4 and 9.2 with pytest-asyncio 0.21, 0.23, 0.25 and 1.5 (tests/matrix/*.txt, venvs made once
under build/matrix/ by matrix_env.py). One small project (tests/cases/case_matrix_*.py: a suite's own
`event_loop` fixture, async tests marked and in a class, an unmarked one in strict mode, sync tests
that drive the loop with asyncio.run and with asyncio.get_event_loop(), one with no loop) runs
plainly and with --affidavit-explore: the outcomes are plain pytest's, nothing ends in an
INTERNALERROR, and every async test is explored or listed with its reason."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import List

import pytest

import matrix_env
from helpers import REPO

CASES = REPO / "tests" / "cases"
FILES = {"conftest.py": "case_matrix_conftest.py", "test_a_get_event_loop.py": "case_matrix_a_get_event_loop.py",
         "test_b_suite.py": "case_matrix_b_suite.py"}
# what --affidavit-explore must explore under every version: each passes plainly on asyncio's loop
EXPLORED = ["test_a_get_event_loop.py::test_get_event_loop_run_until_complete", "test_b_suite.py::test_marked",
            "test_b_suite.py::TestInAClass::test_method", "test_b_suite.py::test_asyncio_run"]


def project(root: Path) -> Path:
    root.mkdir()
    # strict mode; the loop scope 1.x asks for (older versions warn about the unknown key)
    (root / "pytest.ini").write_text("[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n"
                                     "filterwarnings =\n    ignore::DeprecationWarning\n"
                                     "    ignore::pytest.PytestConfigWarning\n")
    for name, case in FILES.items():
        shutil.copy(CASES / case, root / name)
    return root


def affidavit_lines(text: str) -> List[str]:
    return [line for line in text.splitlines() if line.startswith("affidavit:")]


@pytest.mark.parametrize("name", matrix_env.NAMES)
def test_every_async_test_is_explored_or_listed_under_every_version(name: str, tmp_path: Path) -> None:
    py = matrix_env.venv(name)
    pins = dict(line.split("==") for line in (matrix_env.MATRIX / f"{name}.txt").read_text().split())
    assert matrix_env.versions(py) == [pins["pytest"], pins["pytest-asyncio"]]
    root = project(tmp_path / "project")
    plain = matrix_env.pytest_in(py, root, "-p", "no:affidavit", f"--junitxml={tmp_path / 'plain.xml'}")
    explore = matrix_env.pytest_in(py, root, "--affidavit-explore=5", f"--junitxml={tmp_path / 'explore.xml'}")
    said = f"plain:\n{plain.stdout}{plain.stderr}\nexplore:\n{explore.stdout}{explore.stderr}"
    assert "INTERNALERROR" not in said, said
    assert explore.returncode == plain.returncode, said
    assert matrix_env.outcomes(tmp_path / "explore.xml") == matrix_env.outcomes(tmp_path / "plain.xml"), said
    lines = affidavit_lines(explore.stdout)
    assert lines and lines[0].startswith(f"affidavit: {len(EXPLORED)} tests explored"), said
    # the unmarked coroutine, skipped (pytest < 8.4) or failed (8.4 on) by pytest: listed, by name
    assert ", 1 not explored: " in lines[0] and "(first: test_b_suite.py::test_unmarked)" in lines[0], said
    assert "affidavit: 1 sync test ran no event loop: nothing to explore" in lines, said
    assert len(lines) == 2, said
