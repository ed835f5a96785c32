"""sample and explore over several tests on one warm pool (issue 22, items 1-3).

Each test writes a small project into tmp_path whose conftest.py appends the pid of every process
that imports it to a file: a worker imports it once when it collects, and every run is a fork of
that worker, so the file counts the workers that started. One pool of two workers for a whole
directory is two lines; a worker the pool had to replace is one more.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Dict, List

from helpers import PYTHON, describe, engine, engine_env

INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

CONFTEST = '''
import os

with open(os.path.join(os.path.dirname(__file__), "starts.log"), "a") as f:
    f.write(f"{os.getpid()}\\n")
'''

# Module state a run mutates: each run must find it fresh, in this test and in the next one. Under
# pytest the session fixture is set up once and each test appends its own name once, so both pass;
# a run that saw another run's state would count two.
STATE = '''
import asyncio

import pytest

SEEN = []


@pytest.fixture(scope="session")
def resource():
    SEEN.append("session")
    yield SEEN


@pytest.mark.asyncio
async def test_first(resource) -> None:
    await asyncio.sleep(0)
    SEEN.append("first")
    assert SEEN.count("session") == 1 and SEEN.count("first") == 1, SEEN


@pytest.mark.asyncio
async def test_second(resource) -> None:
    await asyncio.sleep(0)
    SEEN.append("second")
    assert SEEN.count("session") == 1 and SEEN.count("second") == 1, SEEN
'''

RACE = '''
import asyncio

import pytest


@pytest.mark.asyncio
async def test_lost_update() -> None:
    balance = {"v": 0}

    async def deposit() -> None:
        v = balance["v"]
        await asyncio.sleep(0.001)
        balance["v"] = v + 1

    await asyncio.gather(deposit(), deposit())
    assert balance["v"] == 2
'''

# Tests that take their run, or their worker, down with them; then one that passes.
BAD = '''
import asyncio
import os
import signal

import pytest


@pytest.mark.asyncio
async def test_a_crash() -> None:
    await asyncio.sleep(0)
    os.kill(os.getpid(), signal.SIGKILL)  # not SIGSEGV: AddressSanitizer turns that into an abort


@pytest.mark.asyncio
async def test_b_hang() -> None:
    await asyncio.sleep(0)
    while True:
        pass


@pytest.mark.asyncio
async def test_c_kills_its_worker() -> None:
    await asyncio.sleep(0)
    os.kill(os.getppid(), signal.SIGKILL)


@pytest.mark.asyncio
async def test_d_exits() -> None:
    await asyncio.sleep(0)
    os._exit(3)


@pytest.mark.asyncio
async def test_e_passes() -> None:
    await asyncio.sleep(0)
'''


def project(tmp_path: Path, files: Dict[str, str]) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pytest.ini").write_text(INI)
    (root / "conftest.py").write_text(CONFTEST)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def starts(root: Path) -> int:
    log = root / "starts.log"
    return len(log.read_text().split()) if log.exists() else 0


def table(stdout: str) -> Dict[str, str]:
    """The closing table: node id -> result."""
    rows = {}
    for line in stdout.splitlines():
        m = re.match(r"^(\S.*?)\s{2,}\d+\s+\d+\s{2}(\S+?)(?::\s.*)?$", line)
        if m and "::" in m.group(2):
            rows[m.group(2)] = m.group(1).strip()
    return rows


def test_a_directory_is_explored_test_by_test_on_one_pool(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_state.py": STATE, "test_race.py": RACE})
    proc = engine("explore", ".", "--runs", "30", cwd=root, timeout=120)
    assert proc.returncode == 1, describe(proc)
    assert table(proc.stdout) == {
        "test_race.py::test_lost_update": "failing schedule",
        # nothing a schedule could change in these two: closed after their zero runs (closure.h)
        "test_state.py::test_first": "no failing (closed)",
        "test_state.py::test_second": "no failing (closed)",
    }, describe(proc)
    assert re.search(r"^3 tests: 1 with a failing schedule, 2 without, 0 not run; \d+ runs in ", proc.stdout,
                     re.M), describe(proc)
    assert starts(root) == 2, describe(proc)  # --workers 2: two workers, started once for three tests


def test_module_state_is_fresh_in_every_run_of_every_test(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_state.py": STATE})
    proc = engine("sample", "test_state.py", "-n", "25", "--json", cwd=root, timeout=120)
    assert proc.returncode == 0, describe(proc)
    docs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(d["nodeid"], d["runs"], d["failed"]) for d in docs] == [
        ("test_state.py::test_first", 25, 0), ("test_state.py::test_second", 25, 0)], describe(proc)
    assert starts(root) == 2, describe(proc)


def test_stdin_answers_each_node_id_as_it_is_read(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_state.py": STATE, "test_race.py": RACE})
    ids = ["test_state.py::test_second", "test_nowhere.py::test_x", "test_race.py::test_lost_update"]
    proc = engine("explore", "--stdin", "test_state.py", "test_race.py", "--runs", "30", "--json", cwd=root,
                  input="\n".join(ids) + "\n", timeout=120)
    assert proc.returncode == 1, describe(proc)  # a failing schedule was found
    docs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [d["nodeid"] for d in docs] == ids, describe(proc)
    assert docs[0]["found"] is False and docs[0]["closure"]["state"] == "closed" and docs[0]["runs"] == 1, docs[0]
    assert docs[1] == {"schema": 1, "nodeid": "test_nowhere.py::test_x",
                       "error": "test_nowhere.py::test_x was not collected (no test of that node id)"}, docs[1]
    assert docs[2]["found"] is True and docs[2]["token"].startswith("afd1:"), docs[2]


def test_the_pool_survives_tests_that_crash_hang_or_kill_their_worker(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_bad.py": BAD})
    proc = engine("explore", "test_bad.py", "--runs", "3", "--timeout", "1", cwd=root, timeout=180)
    assert proc.returncode == 1, describe(proc)
    rows = table(proc.stdout)
    # a run whose worker died with it has no trace: its schedule is the one it was made from
    assert rows == {
        "test_bad.py::test_a_crash": "failing schedule",
        "test_bad.py::test_b_hang": "failing schedule",
        "test_bad.py::test_c_kills_its_worker": "failing schedule",
        "test_bad.py::test_d_exits": "failing schedule",
        "test_bad.py::test_e_passes": "no failing (closed)",
    }, describe(proc)
    assert "killed by SIGKILL" in proc.stdout and "no result within 1000 ms" in proc.stdout, describe(proc)
    assert re.search(r"test_c_kills_its_worker: failing schedule found at run 1 of 1 \(zero\)\n"
                     r"  crash: crash: the worker died\n  token:  afd1:", proc.stdout), describe(proc)
    # the worker test_c killed was replaced, and test_d and test_e ran; the failing schedule is
    # replayed alone 3 times before it is printed (confirmation), each replay killing one more
    assert starts(root) == 2 + 1 + 3, describe(proc)


def pytest_run(root: Path, *args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([str(PYTHON), "-m", "pytest", "-p", "no:randomly", *args], cwd=root, capture_output=True,
                          text=True, timeout=300, env=engine_env(), stdin=subprocess.DEVNULL)


def test_the_plugin_explores_a_session_on_one_engine(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_state.py": STATE, "test_other.py": STATE.replace("test_", "test_o_")})
    plain = pytest_run(root, "-q", "-p", "no:cacheprovider")
    assert plain.returncode == 0, describe(plain)
    before = starts(root)  # the session itself imports the conftest once
    proc = pytest_run(root, "-q", "-p", "no:cacheprovider", "--affidavit-explore=20")
    assert proc.returncode == 0, describe(proc)
    assert "affidavit: 4 tests explored (4 closed: their zero schedule's run, measured, proved every schedule runs " \
           "it), 0 not explored" in proc.stdout, describe(proc)
    workers = starts(root) - 2 * before  # this session's own import, then the engine's workers
    cores = os.cpu_count() or 1  # the engine's default: a worker per core
    assert workers == cores, (workers, cores, describe(proc))
    results = root / ".affidavit" / "explore" / "shard-1-of-1.jsonl"
    docs: List[dict] = [json.loads(l) for l in results.read_text().splitlines()]
    assert sorted(d["nodeid"] for d in docs) == ["test_other.py::test_o_first", "test_other.py::test_o_second",
                                                 "test_state.py::test_first", "test_state.py::test_second"], docs
    # each closed after its zero run (module state fresh in every run: the sample test above)
    assert all(d["runs"] == 1 and d["closure"]["closed"] and d["found"] is False for d in docs), docs


def test_under_xdist_each_worker_explores_its_tests_on_its_own_engine(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_state.py": STATE, "test_other.py": STATE.replace("test_", "test_o_")})
    proc = pytest_run(root, "-q", "-p", "no:cacheprovider", "-n", "2", "--affidavit-explore=20")
    assert proc.returncode == 0, describe(proc)
    assert "affidavit: 4 tests explored (4 closed: their zero schedule's run, measured, proved every schedule runs " \
           "it), 0 not explored" in proc.stdout, describe(proc)
    assert "4 passed" in proc.stdout, describe(proc)
    results = root / ".affidavit" / "explore" / "shard-1-of-1.jsonl"
    docs = [json.loads(l) for l in results.read_text().splitlines()]
    assert sorted(d["nodeid"] for d in docs) == [
        "test_other.py::test_o_first", "test_other.py::test_o_second",
        "test_state.py::test_first", "test_state.py::test_second"], docs
    # each closed after its zero run (module state fresh in every run: the sample test above)
    assert all(d["runs"] == 1 and d["closure"]["closed"] and d["found"] is False for d in docs), docs
