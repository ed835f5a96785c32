"""Every way of running asyncio under pytest gets the controlled loop in affidavit's runs:
pytest-asyncio in strict and auto mode, anyio's pytest plugin on the asyncio backend, and a plain
synchronous test that calls asyncio.run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

from affidavit import _runtime
from helpers import AFFIDAVIT

ZERO = _runtime.portfolio_token(0, 0, 1, "zero")

CHECK = '''
import asyncio

def check_loop(loop: asyncio.AbstractEventLoop) -> None:
    assert type(loop).__name__ == "ControlledLoop", type(loop)
    # Controlled runs start their virtual clock at 1000 s and advance it only by schedule.
    assert loop.time() >= 1000.0
'''

CASES: Dict[str, Dict[str, str]] = {
    "strict": {
        "pytest.ini": "[pytest]\nasyncio_mode = strict\nasyncio_default_fixture_loop_scope = function\n",
        "test_it.py": CHECK + '''
import pytest

@pytest.mark.asyncio
async def test_it():
    check_loop(asyncio.get_running_loop())
    await asyncio.sleep(10)  # virtual: no real waiting
''',
    },
    "auto": {
        "pytest.ini": "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n",
        "test_it.py": CHECK + '''
async def test_it():
    check_loop(asyncio.get_running_loop())
    await asyncio.sleep(10)
''',
    },
    "anyio": {
        "pytest.ini": "[pytest]\n",
        "test_it.py": CHECK + '''
import pytest

@pytest.fixture
def anyio_backend():
    return "asyncio"

@pytest.mark.anyio
async def test_it():
    check_loop(asyncio.get_running_loop())
    await asyncio.sleep(10)
''',
    },
    "asyncio_run": {
        "pytest.ini": "[pytest]\n",
        "test_it.py": CHECK + '''
def test_it():
    async def main():
        check_loop(asyncio.get_running_loop())
        await asyncio.sleep(10)
    asyncio.run(main())
''',
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_runner_gets_the_controlled_loop(case: str, tmp_path: Path) -> None:
    for name, text in CASES[case].items():
        (tmp_path / name).write_text(text)
    proc = subprocess.run([AFFIDAVIT, "replay", ZERO, "test_it.py::test_it", "-n", "3", "--json", "--workers", "1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["runs"] == 3 and out["failed"] == 0 and out["outcomes"]["pass"] == 3, out
    assert out["identical_traces"] is True


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_tests_fail_without_the_controlled_loop(case: str, tmp_path: Path) -> None:
    """The check has teeth: under plain pytest the loop is the stock one and the test fails."""
    for name, text in CASES[case].items():
        (tmp_path / name).write_text(text.replace("await asyncio.sleep(10)", "pass"))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout
    assert "ControlledLoop" in proc.stdout or "_UnixSelectorEventLoop" in proc.stdout
