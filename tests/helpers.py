"""What the integration tests share: where the repository and the installed engine are, the
environment the engine runs in, and the one way to run it.

A plain module, not conftest.py: tests/conftest.py is loaded by every pytest run rooted here, the
engine's workers running tests/cases/ and examples/ included, and a test must not change what those
workers import. The tests import it by name (pytest puts tests/ on sys.path, as for test_cli).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import pytest

REPO = Path(__file__).resolve().parents[1]
# The engine and the interpreter of the environment the tests run in (.venv, or .venv-asan).
AFFIDAVIT = Path(sys.executable).parent / "affidavit"
PYTHON = Path(sys.executable).parent / "python"
# The C build of the same kind: under make test-asan (.venv-asan's interpreter is a launcher beside
# python3.real) the C helpers the tests run are the sanitized ones of build/asan-c, which make
# test-asan builds; build/c is make build's.
C_BUILD = REPO / "build" / ("asan-c" if (Path(sys.executable).parent / "python3.real").exists() else "c")
CASES = "tests/cases"
WORKERS = ("--workers", "2")

Proc = "subprocess.CompletedProcess[str]"


def engine_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The caller's environment minus what would change how the worker's pytest behaves, plus
    extra."""
    env = dict(os.environ)
    for key in ("PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST", "PYTEST_PLUGINS", "AFFIDAVIT_PYTHON"):
        env.pop(key, None)
    env.update(extra or {})
    return env


def describe(proc: Proc) -> str:
    return f"command: {proc.args}\nexit: {proc.returncode}\nstdout: {proc.stdout!r}\nstderr: {proc.stderr!r}"


def engine(
    *args: str,
    cwd: Path = REPO,
    env: Optional[Dict[str, str]] = None,
    timeout: float = 60.0,
    workers: bool = True,
    input: Optional[str] = None,
    preexec_fn: Any = None,
) -> Proc:
    """Runs affidavit with args (plus --workers 2 unless workers is False) in cwd, in engine_env(env),
    with input (or nothing) on stdin. A run past timeout fails the test with what it printed."""
    argv = [str(AFFIDAVIT), *args, *(WORKERS if workers else ())]
    try:
        return subprocess.run(
            argv, cwd=cwd, env=engine_env(env), capture_output=True, text=True, timeout=timeout,
            input=input, stdin=None if input is not None else subprocess.DEVNULL, preexec_fn=preexec_fn,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"affidavit did not finish within {timeout} s: {argv}\nstdout: {exc.stdout!r}\nstderr: {exc.stderr!r}")


def one_json(proc: Proc) -> Dict[str, Any]:
    """stdout as exactly one line holding one JSON object."""
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, f"--json must print exactly one line\n{describe(proc)}"
    data = json.loads(lines[0])
    assert isinstance(data, dict), describe(proc)
    return data


def engine_json(*args: str, expect: Optional[int], **kw: Any) -> Tuple[Proc, Dict[str, Any]]:
    """Runs affidavit with --json (engine's keywords), checks the exit code (expect; None: 0 or 1)
    and parses stdout as one JSON object."""
    proc = engine(*args, "--json", **kw)
    assert proc.returncode in ((0, 1) if expect is None else (expect,)), describe(proc)
    return proc, one_json(proc)


def investigate(nodeid: str, *extra: str, timeout: float = 240, env: Optional[Dict[str, str]] = None,
                workers: bool = True) -> Tuple[int, Dict[str, Any], str]:
    """affidavit investigate NODEID --json: its exit code, its document ({} when it printed none)
    and its stderr, which the document also carries as "_stderr" for any failing assertion that
    prints it."""
    proc = engine("investigate", nodeid, "--json", *extra, timeout=timeout, env=env, workers=workers)
    data = json.loads(proc.stdout) if proc.stdout.strip() else {}
    if data:
        data["_stderr"] = proc.stderr  # shown by any failing assertion that prints data
    return proc.returncode, data, proc.stderr
