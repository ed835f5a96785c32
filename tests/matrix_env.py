"""The venvs of the plugin's version matrix: one per tests/matrix/NAME.txt (pinned pytest,
pytest-asyncio and what a test needs beside them), made once under build/matrix/ and reused.

A venv's directory is named after its file and a digest of its pins (and of the interpreter), so
a changed pin makes a new venv and nothing is reinstalled otherwise. affidavit reaches a venv the
way bench/suites.py reaches its own: a .pth file names a directory that holds only the package and
its dist-info from the environment the tests run in (so the pytest11 entry point registers the
plugin), the engine is that environment's (AFFIDAVIT_ENGINE), and its workers run the venv's
interpreter (AFFIDAVIT_PYTHON). Under make test-asan the venv's interpreter preloads the ASan
runtime as .venv-asan's does (scripts/asan-python.sh), since the extension it imports is
instrumented.

A plain module, not conftest.py, for the reason helpers.py gives.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List

from helpers import AFFIDAVIT, REPO

MATRIX = REPO / "tests" / "matrix"
ROOT = REPO / "build" / "matrix"
NAMES = sorted(p.stem for p in MATRIX.glob("*.txt"))


def _libasan() -> str:
    """The ASan runtime .venv-asan's interpreter preloads, or "" outside make test-asan."""
    launcher = Path(sys.executable).parent / "python"
    if not (Path(sys.executable).parent / "python3.real").exists():
        return ""
    m = re.search(r"LD_PRELOAD='([^']+)'", launcher.read_text(errors="replace"))
    return m.group(1) if m else ""


def _build_env() -> Dict[str, str]:
    """pip runs without the ASan runtime (it is not what make test-asan checks)."""
    skip = ("LD_PRELOAD", "ASAN_OPTIONS", "LSAN_OPTIONS", "PYTHONPATH", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")
    return {k: v for k, v in os.environ.items() if k not in skip}


def _link(venv: Path) -> None:
    """The venv sees only affidavit's package and dist-info from the tests' own environment."""
    site = Path(sysconfig.get_paths()["purelib"])
    link = venv / "affidavit-link"
    want = {e.name: str(e) for e in [site / "affidavit", *map(Path, glob.glob(str(site / "affidavit-*.dist-info")))]}
    have = {e.name: os.readlink(e) for e in link.iterdir()} if link.is_dir() else {}
    if have != want:  # left alone when right: another test's session may be importing through it
        shutil.rmtree(link, ignore_errors=True)
        link.mkdir()
        for name, target in want.items():
            os.symlink(target, link / name)
    for target in glob.glob(str(venv / "lib" / "python3*" / "site-packages")):
        (Path(target) / "affidavit-matrix.pth").write_text(f"{link}\n")


def venv(name: str) -> Path:
    """The interpreter of the venv for tests/matrix/NAME.txt, made if missing (under a lock: two
    test processes may ask for it at once), with affidavit linked in."""
    pins = (MATRIX / f"{name}.txt").read_text()
    asan = _libasan()
    base = getattr(sys, "_base_executable", sys.executable)
    key = hashlib.sha256(f"{pins}\n{base}\n{asan}".encode()).hexdigest()[:10]
    where = ROOT / f"{name}-{key}"
    py = where / "bin" / "python"
    ROOT.mkdir(parents=True, exist_ok=True)
    with open(ROOT / f".{name}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (where / ".complete").exists():
            shutil.rmtree(where, ignore_errors=True)
            env = _build_env()
            subprocess.run([base, "-m", "venv", str(where)], check=True, env=env)
            p = subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                "-r", str(MATRIX / f"{name}.txt")], capture_output=True, text=True, env=env)
            assert p.returncode == 0, f"pip install of {name} failed:\n{p.stdout[-3000:]}{p.stderr[-3000:]}"
            if asan:
                subprocess.run(["bash", str(REPO / "scripts" / "asan-python.sh"), str(where), asan], check=True)
            (where / ".complete").write_text(pins)
        _link(where)
    return py


def env(py: Path) -> Dict[str, str]:
    """The environment a session in a matrix venv runs in: its workers are that venv's Python."""
    out = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST", "PYTEST_PLUGINS", "VIRTUAL_ENV", "PYTHONPATH")}
    out.update(AFFIDAVIT_PYTHON=str(py), AFFIDAVIT_ENGINE=str(AFFIDAVIT))
    return out


def pytest_in(py: Path, cwd: Path, *args: str, timeout: float = 300) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([str(py), "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd, env=env(py),
                          capture_output=True, text=True, timeout=timeout)


def versions(py: Path) -> List[str]:
    p = subprocess.run([str(py), "-c", "import pytest, pytest_asyncio; print(pytest.__version__, "
                        "pytest_asyncio.__version__)"], capture_output=True, text=True, env=env(py), check=True)
    return p.stdout.split()


def outcomes(xml: Path) -> Dict[str, str]:
    """test name -> passed, failed, error or skipped, from pytest's JUnit XML."""
    out: Dict[str, str] = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        kinds = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
        out[f"{case.get('classname')}::{case.get('name')}"] = kinds[0] if kinds else "passed"
    return out
