"""Bounds: failure text is kept whole and cannot drive a terminal; nothing waits forever.

- A failure message holding a NUL byte and terminal control sequences (tests/cases/case_controls.py)
  comes out of every command whole: in JSON exactly as pytest reports it (NUL as \\u0000), in text
  with the NUL shown as U+2400 and no control byte at all, in the store and its reports the same.
- --timeout bounds a worker's start (collection): a conftest that sleeps at import and a `check`
  class whose constructor loops end in one error line, with no process left behind.
- A store path that is a FIFO (the database or a sidecar) is refused in one line instead of
  blocking every command that reads the store; every reading command is run with a timeout.
- serve: a port in use is one line, a port that is not a number is a usage error, and an incident
  stored without a trace answers 404 for its trace.

Every affidavit process runs under a subprocess timeout, so a command that blocks fails its test
instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from test_bad_input import Proc, afd, assert_nothing_left, marked_env
from helpers import AFFIDAVIT, CASES, PYTHON, REPO, describe, engine_env
from test_cli import assert_usage_error

CONTROLS = f"{CASES}/case_controls.py::test_message_with_controls"
CONTROL_BYTES = ("\x00", "\x1b", "\x07")
NUL_PICTURE = "\u2400"  # how text output shows a NUL byte
ESC_PICTURE = "\u241b"
PASSING = f"{CASES}/case_pass.py::test_always_passes"


# ---- helpers ----


def pytest_failure_text(nodeid: str, tmp_path: Path) -> str:
    """What pytest itself reports for nodeid's failure, in the worker's 'path:line: message' form:
    a plugin records the call phase's crash location and message under plain `python -m pytest`."""
    plugin = tmp_path / "record_crash.py"
    out = tmp_path / "crash.json"
    plugin.write_text(
        "import json, os\n"
        "def pytest_runtest_logreport(report):\n"
        "    if report.when == 'call' and report.failed:\n"
        "        c = report.longrepr.reprcrash\n"
        f"        open({str(out)!r}, 'w').write(json.dumps([os.path.relpath(c.path), c.lineno, c.message]))\n"
    )
    env = engine_env()
    env["PYTHONPATH"] = str(tmp_path)
    proc = subprocess.run([str(PYTHON), "-m", "pytest", "-q", "-p", "record_crash", "-p", "no:cacheprovider", nodeid],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, describe(proc)
    path, line, message = json.loads(out.read_text())
    return f"{path}:{line}: {message.strip().splitlines()[0]}"


def assert_terminal_safe(text: str, proc: Proc) -> None:
    """No control byte but newline and tab, and no C1 control, reaches the terminal."""
    bad = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    assert not bad, f"control characters {bad!r} in text output\n{describe(proc)}"


def one_error_line(proc: Proc, *words: str) -> str:
    """stderr is exactly one 'affidavit: error:' line holding every word (case-insensitively)."""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("affidavit: error: "), describe(proc)
    for word in words:
        assert word.lower() in lines[0].lower(), f"{word!r} missing\n{describe(proc)}"
    return lines[0]


def store_env(tmp_path: Path) -> Dict[str, str]:
    return {"AFFIDAVIT_DIR": str(tmp_path / "store")}


# ---- item 3: failure text is whole ----


def test_sample_keeps_a_nul_in_json_and_shows_it_in_text(tmp_path: Path) -> None:
    expected = pytest_failure_text(CONTROLS, tmp_path)
    for byte in CONTROL_BYTES:
        assert byte in expected, expected  # the reference itself holds every byte under test
    proc = afd("sample", CONTROLS, "-n", "2", "--timeout", "5", "--json", timeout=120)
    assert proc.returncode == 1, describe(proc)
    data = json.loads(proc.stdout)
    assert data["failure"] == expected, describe(proc)

    proc = afd("sample", CONTROLS, "-n", "2", "--timeout", "5", timeout=120)
    assert proc.returncode == 1, describe(proc)
    assert_terminal_safe(proc.stdout, proc)
    line = next(l for l in proc.stdout.splitlines() if "first failure" in l)
    shown = expected.replace("\x00", NUL_PICTURE).replace("\x1b", ESC_PICTURE).replace("\x07", "\u2407")
    assert line.endswith(shown), describe(proc)


def test_explore_keeps_the_failure_whole(tmp_path: Path) -> None:
    expected = pytest_failure_text(CONTROLS, tmp_path)
    proc = afd("explore", CONTROLS, "--runs", "3", "--timeout", "5", "--json", timeout=120)
    assert proc.returncode == 1, describe(proc)
    data = json.loads(proc.stdout)
    assert data["found"] is True and data["failure"] == expected, describe(proc)
    proc = afd("explore", CONTROLS, "--runs", "3", "--timeout", "5", timeout=120)
    assert proc.returncode == 1, describe(proc)
    assert_terminal_safe(proc.stdout, proc)
    assert f"nul[{NUL_PICTURE}]" in proc.stdout and "PWNED" in proc.stdout, describe(proc)


def test_investigate_stores_the_failure_whole(tmp_path: Path) -> None:
    expected = pytest_failure_text(CONTROLS, tmp_path)
    env = store_env(tmp_path)
    budget = ("--natural", "3", "--runs", "5", "--replays", "2", "--timeout", "5")
    proc = afd("investigate", CONTROLS, *budget, env=env, timeout=180)
    assert proc.returncode == 1, describe(proc)
    assert_terminal_safe(proc.stdout, proc)
    assert f"nul[{NUL_PICTURE}]osc[{ESC_PICTURE}]0;PWNED" in proc.stdout, describe(proc)

    proc = afd("investigate", CONTROLS, *budget, "--json", env=env, timeout=180)
    assert proc.returncode == 1, describe(proc)
    assert json.loads(proc.stdout)["failure"] == expected, describe(proc)

    for argv in (["show", "2", "--json"], ["report", "2", "--format", "json"]):
        proc = afd(*argv, env=env, timeout=30, workers=False)
        assert proc.returncode == 0, describe(proc)
        assert json.loads(proc.stdout)["failure"] == expected, describe(proc)
    proc = afd("report", "2", "--format", "sarif", env=env, timeout=30, workers=False)
    assert proc.returncode == 0, describe(proc)
    assert json.loads(proc.stdout)["runs"][0]["properties"]["failure"] == expected, describe(proc)
    proc = afd("report", "2", "--format", "html", env=env, timeout=30, workers=False)
    assert proc.returncode == 0, describe(proc)
    pre = re.search(r'<pre class="failure">([^<]*)</pre>', proc.stdout)
    assert pre, describe(proc)
    assert "&#x2400;" in pre.group(1) and "]end" in pre.group(1), pre.group(1)
    assert not any(b in proc.stdout for b in CONTROL_BYTES), "raw control bytes in the HTML report"
    for argv in (["show", "2"], ["ls"]):
        proc = afd(*argv, env=env, timeout=30, workers=False)
        assert proc.returncode == 0, describe(proc)
        assert_terminal_safe(proc.stdout, proc)


def test_merge_keeps_a_nul_in_a_result_line(tmp_path: Path) -> None:
    """A CI result line whose failure holds \\u0000 is merged whole, and reads back whole."""
    env = store_env(tmp_path)
    failure = "x.py:3: AssertionError: a\x00b\x1b[31mc"
    doc = {"nodeid": "x.py::test_x", "found": True, "token": "afd1:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaacbvibx4",
           "runs": 4, "failing_run": 2, "failure": failure, "shard": "1/1"}
    results = tmp_path / "shard.jsonl"
    results.write_text(json.dumps(doc) + "\n")
    proc = afd("merge", str(results), env=env, timeout=30, workers=False)
    assert proc.returncode == 0, describe(proc)
    proc = afd("show", "1", "--json", env=env, timeout=30, workers=False)
    assert proc.returncode == 0, describe(proc)
    assert json.loads(proc.stdout)["failure"] == failure, describe(proc)
    proc = afd("show", "1", env=env, timeout=30, workers=False)
    assert proc.returncode == 0, describe(proc)
    assert_terminal_safe(proc.stdout, proc)


def test_error_lines_do_not_pass_escapes_through(tmp_path: Path) -> None:
    """A collection error the test module raises with control sequences is shown, not run."""
    (tmp_path / "test_boom.py").write_text(
        'raise RuntimeError("boom\\x1b]0;PWNED\\x07\\x1b[2J")\n\nasync def test_x():\n    pass\n')
    proc = afd("sample", "test_boom.py::test_x", "-n", "1", "--timeout", "5", cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, describe(proc)
    line = one_error_line(proc, "boom", "PWNED")
    assert_terminal_safe(line, proc)


# ---- item 10: --timeout bounds collection ----


@pytest.mark.parametrize("command", [["sample", "-n", "2"], ["explore", "--runs", "2"],
                                     ["investigate", "--natural", "2", "--runs", "2"]])
def test_a_conftest_that_blocks_at_import_is_bounded(tmp_path: Path, command: List[str]) -> None:
    (tmp_path / "conftest.py").write_text("import time\n\ntime.sleep(1000)\n")
    (tmp_path / "test_slow_import.py").write_text(
        "import asyncio\nimport pytest\n\n\n@pytest.mark.asyncio\nasync def test_x():\n    await asyncio.sleep(0)\n")
    node = "test_slow_import.py::test_x"
    proc = afd(command[0], node, *command[1:], "--timeout", "1", cwd=tmp_path, env=store_env(tmp_path), timeout=60)
    assert proc.returncode == 2, describe(proc)
    assert proc.stdout == "", describe(proc)
    one_error_line(proc, f"collecting {node} took longer than", "--timeout 1 s", "conftest")


def test_check_whose_constructor_loops_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "spin.py").write_text(
        "class Spin:\n    def __init__(self):\n        while True:\n            pass\n\n"
        "    async def go(self):\n        pass\n")
    proc = afd("check", "spin.py", "--cls", "Spin", "--method", "go", "--timeout", "1", "--natural", "2",
               "--runs", "2", cwd=tmp_path, env=store_env(tmp_path), timeout=60)
    assert proc.returncode == 2, describe(proc)
    one_error_line(proc, "took longer than", "--timeout 1 s", "Spin()")


# ---- item 10: the store ----


STORE_READERS = [["ls"], ["ls", "--json"], ["show", "1"], ["show", "1", "--json"], ["report", "1"],
                 ["report", "1", "--format", "json"], ["report", "1", "--format", "sarif"],
                 ["report", "1", "--format", "chrome-trace"]]


def make_store(tmp_path: Path) -> Path:
    """A real store with one incident (merged from a result line), in tmp_path/store."""
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps({"nodeid": "x.py::test_x", "found": False, "runs": 2, "shard": "1/1"}) + "\n")
    proc = afd("merge", str(results), env=store_env(tmp_path), timeout=30, workers=False)
    assert proc.returncode == 0, describe(proc)
    return tmp_path / "store" / "incidents.db"


@pytest.mark.parametrize("argv", STORE_READERS, ids=lambda a: "-".join(a))
def test_a_fifo_in_place_of_the_store_is_refused(tmp_path: Path, argv: List[str]) -> None:
    (tmp_path / "store").mkdir()
    os.mkfifo(tmp_path / "store" / "incidents.db")
    proc = afd(*argv, env=store_env(tmp_path), timeout=20, workers=False)
    assert proc.returncode != 0, describe(proc)
    one_error_line(proc, "incidents.db", "FIFO", "not a regular file")


@pytest.mark.parametrize("sidecar", ["-wal", "-shm", "-journal"])
@pytest.mark.parametrize("argv", [["ls"], ["show", "1", "--json"], ["report", "1", "--format", "json"]],
                         ids=lambda a: "-".join(a))
def test_a_fifo_in_place_of_a_store_sidecar_is_refused(tmp_path: Path, sidecar: str, argv: List[str]) -> None:
    db = make_store(tmp_path)
    for extra in ("-wal", "-shm", "-journal"):
        Path(f"{db}{extra}").unlink(missing_ok=True)
    os.mkfifo(f"{db}{sidecar}")
    proc = afd(*argv, env=store_env(tmp_path), timeout=20, workers=False)
    assert proc.returncode != 0, describe(proc)
    one_error_line(proc, f"incidents.db{sidecar}", "FIFO")


def test_investigate_reports_a_fifo_store_and_still_prints_its_result(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    os.mkfifo(tmp_path / "store" / "incidents.db")
    proc = afd("investigate", CONTROLS, "--natural", "2", "--runs", "2", "--replays", "2", "--timeout", "5",
               "--json", env=store_env(tmp_path), timeout=120)
    assert "FIFO" in proc.stderr and "incidents.db" in proc.stderr, describe(proc)
    assert json.loads(proc.stdout)["nodeid"] == CONTROLS, describe(proc)


def test_serve_page_reports_a_fifo_store(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    os.mkfifo(tmp_path / "store" / "incidents.db")
    with serving(tmp_path) as base:
        status, body = http_get(f"{base}/")
        assert status == 200 and "FIFO" in body, body
        status, body = http_get(f"{base}/incident/1")
        assert status in (404, 500) and "FIFO" in body, (status, body)


# ---- item 11: serve ----


class serving:
    """`affidavit serve --port 0` over tmp_path's store, for the length of a with block; yields the
    base URL read from the line serve prints."""

    def __init__(self, tmp_path: Path) -> None:
        self.env = marked_env(uuid.uuid4().hex, store_env(tmp_path))
        self.proc: Optional["subprocess.Popen[str]"] = None

    def __enter__(self) -> str:
        self.proc = subprocess.Popen([str(AFFIDAVIT), "serve", "--port", "0"], cwd=REPO, env=self.env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found, f"serve printed {line!r}"
        return f"http://127.0.0.1:{found.group(1)}"

    def __exit__(self, *exc: Any) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate(timeout=10)
        assert self.proc.returncode == 0, f"serve exited {self.proc.returncode} on SIGTERM"
        assert_nothing_left(self.env["AFD_BAD_MARKER"])


def http_get(url: str) -> Tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def test_serve_a_port_in_use_is_one_line() -> None:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 0)
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        proc = afd("serve", "--port", str(port), timeout=20, workers=False)
    assert proc.returncode == 2, describe(proc)
    assert proc.stdout == "", describe(proc)
    one_error_line(proc, f"127.0.0.1:{port}", "in use")


@pytest.mark.parametrize("port", ["", "abc", "70000", "-1", " 80", "+80", "8o"])
def test_serve_port_that_is_not_a_port_is_a_usage_error(port: str) -> None:
    proc = afd("serve", "--port", port, timeout=20, workers=False)
    assert_usage_error(proc, "port")


def test_serve_trace_of_an_incident_without_one_is_404(tmp_path: Path) -> None:
    """An explore result that found nothing is stored without traces (`show` says 'traces: none');
    its trace is not found, while its JSON is there."""
    make_store(tmp_path)
    proc = afd("show", "1", env=store_env(tmp_path), timeout=20, workers=False)
    assert "traces: none" in proc.stdout, describe(proc)
    with serving(tmp_path) as base:
        status, body = http_get(f"{base}/incident/1.json")
        assert status == 200 and json.loads(body)["incident"] == 1, (status, body)
        status, body = http_get(f"{base}/incident/1.trace.json")
        assert status == 404, (status, body)
        assert "trace" in body and len(body.splitlines()) == 1, body
        status, _ = http_get(f"{base}/incident/7.trace.json")
        assert status == 404
    proc = afd("report", "1", "--format", "chrome-trace", env=store_env(tmp_path), timeout=20, workers=False)
    assert proc.returncode == 2, describe(proc)
    one_error_line(proc, "trace is not available")
