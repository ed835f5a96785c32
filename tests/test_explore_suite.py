"""pytest --affidavit-explore on suites configured as real ones are (issue 18, items 1-5 and 11).

Every test here runs pytest on a small project written into tmp_path, as a user would, and reads
what the terminal shows: a test that could not be explored is never skipped in silence, the
user's pytest configuration (-o, conftest options, addopts = --cache-clear, filterwarnings =
error) reaches the workers, a timeout armed around the test (as pytest-timeout arms it) neither
aborts the session nor counts exploration against the test, loops the test brings are controlled
where asyncio lets us and named where not, the results file is each session's own, and merge says
what it folded. A fake engine (AFFIDAVIT_ENGINE) stands in for the timing_sensitive verdict.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest

from helpers import AFFIDAVIT, PYTHON, describe, engine, engine_env

HEAD = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

ASYNC_OK = '''
import asyncio

import pytest


@pytest.mark.asyncio
async def test_async_ok() -> None:
    await asyncio.sleep(0)
'''

# A sync test that drives asyncio's loop itself, and one that brings a loop class of its own.
SYNC_LOOPS = '''
import asyncio


class OwnLoop(asyncio.SelectorEventLoop):
    pass


def test_runs_asyncio_run() -> None:
    assert asyncio.run(asyncio.sleep(0, result=3)) == 3


def test_own_loop_class() -> None:
    loop = OwnLoop()
    try:
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()


def test_no_loop_at_all() -> None:
    assert 1 + 1 == 2
'''

# Fails only on the controlled loop: shows which loop a run had.
ONLY_STOCK = '''
import asyncio


def loop_is_stock() -> bool:
    return type(asyncio.get_running_loop()).__name__ != "ControlledLoop"
'''


def project(tmp_path: Path, files: Dict[str, str], ini: str = "") -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pytest.ini").write_text(HEAD + ini)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def pytest_run(root: Path, *args: str, env: Optional[Dict[str, str]] = None,
               timeout: float = 300) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([str(PYTHON), "-m", "pytest", "-p", "no:randomly", *args], cwd=root, capture_output=True,
                          text=True, timeout=timeout, env=env or engine_env(), stdin=subprocess.DEVNULL)


def summary_lines(proc: "subprocess.CompletedProcess[str]") -> List[str]:
    """affidavit's lines of the terminal summary: from its totals on (a failure's text above
    may start with "affidavit:" too)."""
    lines = proc.stdout.splitlines()
    start = next((i for i, l in enumerate(lines) if re.match(r"affidavit: \d+ tests? explored", l)), len(lines))
    return [l for l in lines[start:] if l.startswith("affidavit:")]


def outcomes(proc: "subprocess.CompletedProcess[str]") -> Dict[str, int]:
    """pytest's final counts: {"passed": 3, "failed": 1}."""
    last = [l for l in proc.stdout.splitlines() if re.search(r"\d+ (passed|failed|error)", l)]
    assert last, describe(proc)
    return {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|errors?|skipped)", last[-1])}


def results(root: Path) -> List[Dict[str, object]]:
    path = root / ".affidavit" / "explore" / "shard-1-of-1.jsonl"
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.exists() else []


# ---- 1. never skip silently ----

# A conftest that cannot be loaded where affidavit's worker runs (a stand-in for any worker that
# fails to start: the session itself loads it fine).
WORKER_FAILS = '''
import sys

if "affidavit.worker" in sys.modules:
    raise RuntimeError("this conftest refuses to load in a worker")
'''


def not_explored_project(tmp_path: Path) -> Path:
    root = project(tmp_path, {"test_ok.py": ASYNC_OK, "test_loops.py": SYNC_LOOPS})
    sub = root / "sub"
    sub.mkdir()
    (sub / "conftest.py").write_text(WORKER_FAILS)
    (sub / "test_a.py").write_text(ASYNC_OK)
    (sub / "test_b.py").write_text(ASYNC_OK.replace("test_async_ok", "test_async_ok_too"))
    return root



def closed(n: int) -> str:
    """The summary's note on n tests closed after their zero run (closure.h)."""
    return f"({n} closed: their zero schedule's run, measured, proved every schedule runs it)"


@pytest.mark.parametrize("verbosity", [[], ["-q"]], ids=["default", "-q"])
def test_every_test_not_explored_is_counted_with_its_reason(tmp_path: Path, verbosity: List[str]) -> None:
    root = not_explored_project(tmp_path)
    proc = pytest_run(root, "--affidavit-explore=3", *verbosity)
    assert proc.returncode == 0, describe(proc)
    assert outcomes(proc) == {"passed": 6}, describe(proc)
    lines = summary_lines(proc)
    # explored: test_ok.py's async test and test_loops.py's asyncio.run test; not: the two under sub/
    # (the worker could not start) and the one with its own loop class; the loop-free test is no
    # candidate (counted apart, as a sync test that ran no loop)
    assert lines[0] == f"affidavit: 2 tests explored {closed(2)}, 3 not explored", lines
    conftest_line = next(l for l in lines if "refuses to load in a worker" in l)
    assert conftest_line.startswith("affidavit:   2 not explored: ImportError while loading conftest "), conftest_line
    assert "RuntimeError: this conftest refuses to load in a worker (first: sub/test_a.py::test_async_ok)" \
        in conftest_line, conftest_line
    own = next(l for l in lines if "own loop" in l)
    assert own.startswith("affidavit:   1 not explored: the test brings its own loop class test_loops.OwnLoop"), own
    assert own.endswith("(first: test_loops.py::test_own_loop_class)"), own


STOCK_CLASS = '''
import asyncio


def test_makes_a_selector_loop() -> None:
    loop = asyncio.SelectorEventLoop()
    try:
        assert loop.run_until_complete(asyncio.sleep(0, result=5)) == 5
    finally:
        loop.close()
'''


def test_a_loop_of_asyncios_own_class_made_by_the_test_is_not_called_its_own_class(tmp_path: Path) -> None:
    # asyncio.SelectorEventLoop() made by the test, not by the policy: not explored, and said so --
    # not "brings its own loop class asyncio.unix_events._UnixSelectorEventLoop under the event loop
    # policy affidavit.loop.ControlledPolicy" (aiorun's suite at first contact), which names
    # asyncio's class as the project's and the plugin's own policy as the project's
    root = project(tmp_path, {"test_stock_class.py": STOCK_CLASS})
    proc = pytest_run(root, "--affidavit-explore=3", "-q")
    assert proc.returncode == 0, describe(proc)
    assert summary_lines(proc) == [
        "affidavit: 0 tests explored, 1 not explored: the test makes a loop of asyncio's own class "
        "asyncio.unix_events._UnixSelectorEventLoop itself, not through the event loop policy, whose loops are "
        "the ones affidavit controls (first: test_stock_class.py::test_makes_a_selector_loop)",
    ], describe(proc)


def test_one_reason_is_one_line(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_loops.py": SYNC_LOOPS})
    proc = pytest_run(root, "--affidavit-explore=3", "-q")
    assert proc.returncode == 0, describe(proc)
    assert summary_lines(proc) == [
        f"affidavit: 1 test explored {closed(1)}, 1 not explored: the test brings its own loop class "
        "test_loops.OwnLoop (first: test_loops.py::test_own_loop_class)",
        "affidavit: 1 sync test ran no event loop: nothing to explore",  # test_no_loop_at_all, counted
    ], describe(proc)


@pytest.mark.parametrize("how", [["--affidavit-strict"], ["-o", "affidavit_strict=true"]], ids=["option", "ini"])
def test_strict_makes_a_test_not_explored_fail_the_session(tmp_path: Path, how: List[str]) -> None:
    root = project(tmp_path, {"test_loops.py": SYNC_LOOPS})
    proc = pytest_run(root, "--affidavit-explore=3", "-q", *how)
    assert proc.returncode == 1, describe(proc)
    assert outcomes(proc) == {"passed": 3}, describe(proc)  # no test is red: the session is
    lines = summary_lines(proc)
    assert "affidavit: --affidavit-strict: 1 test not explored, so the session fails" in lines, lines
    assert any("(first: test_loops.py::test_own_loop_class)" in l for l in lines), lines


def test_under_xdist_the_controller_prints_the_totals(tmp_path: Path) -> None:
    pytest.importorskip("xdist")  # requirements-dev.txt installs it
    root = not_explored_project(tmp_path)
    proc = pytest_run(root, "--affidavit-explore=3", "-q", "-n", "2", "--affidavit-strict")
    assert proc.returncode == 1, describe(proc)
    lines = summary_lines(proc)
    assert lines[0] == f"affidavit: 2 tests explored {closed(2)}, 3 not explored", describe(proc)
    assert any(l.startswith("affidavit:   2 not explored: ImportError while loading conftest") for l in lines), lines
    assert "affidavit: --affidavit-strict: 3 tests not explored, so the session fails" in lines, lines


# ---- 2. filterwarnings = error ----


def test_a_project_with_filterwarnings_error_is_explored(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_ok.py": ASYNC_OK}, "filterwarnings = error\n")
    proc = pytest_run(root, "--affidavit-explore=3", "-q")
    assert proc.returncode == 0, describe(proc)
    assert summary_lines(proc) == [f"affidavit: 1 test explored {closed(1)}, 0 not explored"], describe(proc)
    assert [(r["runs"], r["closure"]["state"]) for r in results(root)] == [(1, "closed")], results(root)


def engine_in(root: Path, *args: str) -> "subprocess.CompletedProcess[str]":
    """affidavit with args and one worker in root."""
    return engine(*args, "--workers", "1", cwd=root, timeout=120, workers=False)


def test_only_a_wrong_request_is_a_usage_error(tmp_path: Path) -> None:
    """Exit 2 for a node id that matches nothing and for arguments pytest refuses (its message
    whole: the reason, not the usage synopsis); exit 3 for a conftest that fails to load."""
    root = not_explored_project(tmp_path)
    missing = engine_in(root, "sample", "test_ok.py::test_nothing_here", "-n", "1")
    assert missing.returncode == 2 and "not found" in missing.stderr, describe(missing)
    bogus = engine_in(root, "sample", "test_ok.py::test_async_ok", "-n", "1", "--pytest-arg=--no-such-option")
    assert bogus.returncode == 2, describe(bogus)
    line = bogus.stderr.strip()
    assert line.startswith("affidavit: error: ") and "\n" not in line, describe(bogus)
    assert "unrecognized arguments: --no-such-option" in line and "usage:" not in line, line
    conftest = engine_in(root, "explore", "sub/test_a.py::test_async_ok", "--runs", "1")
    assert conftest.returncode == 3, describe(conftest)
    assert "RuntimeError: this conftest refuses to load in a worker" in conftest.stderr, describe(conftest)


# ---- 3. the user's configuration reaches the worker ----

# A conftest option the test's fixture needs, and an unmarked async test that only auto mode runs.
OPTION_CONFTEST = '''
import pytest


def pytest_addoption(parser):
    parser.addoption("--db-url", default=None)


@pytest.fixture
def db_url(request):
    url = request.config.getoption("--db-url")
    assert url == "sqlite://", f"--db-url is {url!r}"
    return url
'''

OPTION_TEST = '''
import asyncio


async def test_uses_the_db(db_url) -> None:
    await asyncio.sleep(0)
    assert db_url == "sqlite://"
'''


def test_command_line_options_reach_the_worker(tmp_path: Path) -> None:
    root = project(tmp_path, {"conftest.py": OPTION_CONFTEST, "test_db.py": OPTION_TEST})
    proc = pytest_run(root, "--affidavit-explore=3", "-q", "-o", "asyncio_mode=auto", "--db-url", "sqlite://",
                      "-W", "error::DeprecationWarning", "test_db.py")
    assert proc.returncode == 0, describe(proc)
    assert outcomes(proc) == {"passed": 1}, describe(proc)
    assert summary_lines(proc) == [f"affidavit: 1 test explored {closed(1)}, 0 not explored"], describe(proc)
    (found,) = results(root)
    assert found["outcomes"]["pass"] == 1 and found["found"] is False, found  # type: ignore[index]


def test_addopts_cache_clear_works_and_the_cache_stays_the_sessions(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_ok.py": ASYNC_OK}, "addopts = --cache-clear\n")
    proc = pytest_run(root, "--affidavit-explore=3", "-q")
    assert proc.returncode == 0, describe(proc)
    assert summary_lines(proc) == [f"affidavit: 1 test explored {closed(1)}, 0 not explored"], describe(proc)
    # what the session's own cache plugin writes, and nothing else: the workers write elsewhere
    cached = sorted(p.name for p in (root / ".pytest_cache" / "v" / "cache").iterdir())
    assert cached == ["nodeids"], cached


# ---- 4. a timeout around the test (pytest-timeout's signal method, in a conftest) ----

# What pytest-timeout does with timeout = 1 and its default method on POSIX: a SIGALRM timer armed
# around each test's protocol, whose handler fails the test. Collection is slow in the worker
# only, so exploring takes longer than the test's timeout wherever it is counted.
ALARM_CONFTEST = '''
import signal
import sys
import time

import pytest

if "affidavit.worker" in sys.modules:
    time.sleep(1.5)


def on_alarm(signum, frame):
    pytest.fail("Timeout >1.0s")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
'''

SLOW_IN_A_RUN = '''
import asyncio
import sys
import time

import pytest


@pytest.mark.asyncio
async def test_quick() -> None:
    await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_slow_only_when_controlled() -> None:
    await asyncio.sleep(0)
    if type(asyncio.get_running_loop()).__name__ == "ControlledLoop":
        end = time.perf_counter() + 3  # over the timeout: the run must fail as the test's timeout makes it
        while time.perf_counter() < end:
            pass
'''


def test_a_timeout_around_the_test_neither_aborts_nor_counts_exploration(tmp_path: Path) -> None:
    root = project(tmp_path, {"conftest.py": ALARM_CONFTEST, "test_t.py": SLOW_IN_A_RUN})
    proc = pytest_run(root, "--affidavit-explore=1", "--affidavit-budget=10", "-q", "-p", "no:faulthandler")
    assert "INTERNALERROR" not in proc.stdout + proc.stderr, describe(proc)
    # the quick test is explored, uncut by the timer; the slow one fails in its run by the test's
    # own timeout, as it would under pytest on a machine where it is slow
    assert outcomes(proc) == {"passed": 2, "error": 1}, describe(proc)  # red at its teardown
    assert "test_t.py::test_slow_only_when_controlled" in proc.stdout and "Timeout >1.0s" in proc.stdout, \
        describe(proc)
    assert summary_lines(proc)[0] == "affidavit: 2 tests explored (1 failed under a controlled schedule), " \
                                     "0 not explored", describe(proc)


# ---- 5. loops the test brings ----

FACTORY_CONFTEST = '''
import asyncio


class OwnLoop(asyncio.SelectorEventLoop):
    pass


def pytest_asyncio_loop_factories(config, item):
    return {"stock": asyncio.new_event_loop, "own": OwnLoop}
'''

FACTORY_TEST = ONLY_STOCK + '''
import pytest


@pytest.mark.asyncio
async def test_on_the_stock_loop() -> None:
    await asyncio.sleep(0)
    assert loop_is_stock()
'''


def test_a_loop_factory_of_asyncio_is_controlled_and_another_is_named(tmp_path: Path) -> None:
    root = project(tmp_path, {"conftest.py": FACTORY_CONFTEST, "test_f.py": FACTORY_TEST})
    plain = pytest_run(root, "-q")
    assert plain.returncode == 0 and outcomes(plain) == {"passed": 2}, describe(plain)
    proc = pytest_run(root, "--affidavit-explore=2", "-q")
    # the stock factory's runs are on the controlled loop (where the assertion fails); the own
    # class is not affidavit's to control, and says so
    assert outcomes(proc) == {"passed": 2, "error": 1}, describe(proc)  # red at its teardown
    assert "ERROR test_f.py::test_on_the_stock_loop[stock]" in proc.stdout, describe(proc)
    lines = summary_lines(proc)
    assert lines[0].startswith("affidavit: 1 test explored (1 failed under a controlled schedule), 1 not explored: "
                               "the test brings its own loop class conftest.OwnLoop"), lines
    assert lines[0].endswith("(first: test_f.py::test_on_the_stock_loop[own])"), lines


POLICY_CONFTEST = '''
import asyncio

import pytest


class OwnLoop(asyncio.SelectorEventLoop):
    pass


class OwnPolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self):
        return OwnLoop()
'''

POLICY_TEST = ONLY_STOCK + '''
import pytest

from conftest import OwnPolicy


@pytest.fixture
def event_loop_policy(request):
    return OwnPolicy() if "own" in request.node.name else asyncio.DefaultEventLoopPolicy()


@pytest.mark.asyncio
async def test_stock_policy() -> None:
    assert loop_is_stock()


@pytest.mark.asyncio
async def test_own_policy() -> None:
    assert loop_is_stock()
'''


def test_an_overridden_policy_of_asyncio_is_controlled_and_another_is_named(tmp_path: Path) -> None:
    root = project(tmp_path, {"conftest.py": POLICY_CONFTEST, "test_p.py": POLICY_TEST},
                   "filterwarnings = ignore::DeprecationWarning\n")
    plain = pytest_run(root, "-q")
    assert plain.returncode == 0 and outcomes(plain) == {"passed": 2}, describe(plain)
    proc = pytest_run(root, "--affidavit-explore=2", "-q")
    assert outcomes(proc) == {"passed": 2, "error": 1}, describe(proc)  # red at its teardown
    assert "ERROR test_p.py::test_stock_policy" in proc.stdout, describe(proc)
    lines = summary_lines(proc)
    assert lines[0].startswith("affidavit: 1 test explored (1 failed under a controlled schedule), 1 not explored: "
                               "the test brings its own loop class conftest.OwnLoop"), lines
    assert lines[0].endswith("(first: test_p.py::test_own_policy)"), lines


SYNC_RACE = '''
import asyncio

BALANCE = {"amount": 0}


async def deposit(n: int) -> None:
    current = BALANCE["amount"]
    await asyncio.sleep(0.001 * n)  # each deposit waits a little between its read and its write
    BALANCE["amount"] = current + n


async def deposits() -> None:
    first = asyncio.ensure_future(deposit(1))
    await asyncio.sleep(0.0015)
    await deposit(0)
    await first


def test_with_asyncio_run() -> None:
    BALANCE["amount"] = 0
    asyncio.run(deposits())
    assert BALANCE["amount"] == 1


def test_with_run_until_complete() -> None:
    BALANCE["amount"] = 0
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(deposits())
    finally:
        loop.close()
    assert BALANCE["amount"] == 1
'''


def test_sync_tests_that_drive_a_loop_are_explored(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_sync.py": SYNC_RACE})
    plain = pytest_run(root, "-q")
    assert plain.returncode == 0 and outcomes(plain) == {"passed": 2}, describe(plain)
    proc = pytest_run(root, "--affidavit-explore=40", "-q")
    assert summary_lines(proc)[0].startswith("affidavit: 2 tests explored"), describe(proc)
    assert {r["nodeid"] for r in results(root)} == {"test_sync.py::test_with_asyncio_run",
                                                    "test_sync.py::test_with_run_until_complete"}, results(root)
    assert all(r["runs"] for r in results(root)), results(root)


# ---- the JSON contract: timing_sensitive is listed apart ----

# `affidavit explore --stdin ...` as the plugin runs it: a node id a line in, a document a line out.
FAKE_ENGINE = '''#!{python}
import json, sys
assert sys.argv[1:3] == ["explore", "--stdin"], sys.argv
for line in sys.stdin:
    nodeid = line.strip()
    print(json.dumps({{"nodeid": nodeid, "found": True, "verdict": "timing_sensitive", "token": "afd1:fake",
                      "runs": 5, "failing_run": 2, "failure": "test_ok.py:9: TimeoutError", "outcome": "fail",
                      "schedule": "pct(seed=1, d=2)", "shard": "1/1",
                      "timing": {{"summary": "fails only when one step takes longer than the 0.1 s timer armed "
                                             "at test_ok.py:8: a slow machine, not a race",
                                 "duration_us": 100000, "site": "test_ok.py:8"}}}}), flush=True)
'''


def fake_engine(tmp_path: Path) -> Dict[str, str]:
    path = tmp_path / "fake-affidavit"
    path.write_text(FAKE_ENGINE.format(python=sys.executable))
    path.chmod(0o755)
    return dict(engine_env(), AFFIDAVIT_ENGINE=str(path))


def test_timing_sensitive_is_listed_apart_and_not_red(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_ok.py": ASYNC_OK})
    env = fake_engine(tmp_path)
    proc = pytest_run(root, "--affidavit-explore=5", "-q", env=env)
    assert proc.returncode == 0 and outcomes(proc) == {"passed": 1}, describe(proc)
    assert summary_lines(proc) == [
        "affidavit: 1 test explored, 0 not explored",
        "affidavit: 1 timing_sensitive (a time threshold of the test crossed by a slow step, not a race; not failed "
        "without --affidavit-strict-timing):",
        "affidavit:   test_ok.py::test_async_ok: fails only when one step takes longer than the 0.1 s timer armed at "
        "test_ok.py:8: a slow machine, not a race",
    ], describe(proc)
    strict = pytest_run(root, "--affidavit-explore=5", "-q", "--affidavit-strict-timing", env=env)
    assert strict.returncode == 1 and outcomes(strict) == {"passed": 1, "error": 1}, describe(strict)
    assert "fails under a timing threshold (timing_sensitive)" in strict.stdout, describe(strict)
    assert "a slow machine, not a race" in strict.stdout, describe(strict)


# ---- 11. each session its own results file; merge says what it folded ----


def test_each_session_starts_its_results_file_and_merge_counts(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_ok.py": ASYNC_OK})
    for _ in range(2):
        proc = pytest_run(root, "--affidavit-explore=2", "-q")
        assert proc.returncode == 0, describe(proc)
    assert [r["nodeid"] for r in results(root)] == ["test_ok.py::test_async_ok"], results(root)
    shard = root / ".affidavit" / "explore" / "shard-1-of-1.jsonl"
    timing = tmp_path / "timing.jsonl"
    timing.write_text(json.dumps({"nodeid": "t.py::t", "found": True, "verdict": "timing_sensitive", "runs": 5,
                                  "failing_run": 1, "failure": "x", "shard": "1/1", "token": "afd1:x"}) + "\n"
                      + json.dumps({"nodeid": "t.py::u", "found": True, "runs": 5, "failing_run": 1,
                                    "failure": "y", "shard": "1/1", "token": "afd1:y"}) + "\n")
    merged = subprocess.run([str(AFFIDAVIT), "merge", str(shard), str(timing)], cwd=root, capture_output=True,
                            text=True, timeout=60, env=engine_env())
    assert merged.returncode == 0, describe(merged)
    assert re.fullmatch(r"merged 3 results from 2 files into \S+: 1 failing, 1 timing_sensitive, 1 clean, "
                        r"0 investigations\n", merged.stdout), describe(merged)
