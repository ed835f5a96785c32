"""A run is pytest's run: the same test gets the same outcome, phase by phase, under affidavit.

Each comparison writes a small project into tmp_path (a pytest.ini, the test file, and a conftest
where the case needs one), runs it under plain ``python -m pytest`` with a recording plugin that
is not a conftest (``-p``, from a directory on PYTHONPATH: it writes each phase's report as one
JSON line), then under ``affidavit sample NODEID -n 4 --json`` from the same directory, and
asserts that every run of affidavit's reports what pytest reported: the first phase that did not
pass (setup or teardown: "error" with "setup failed"/"teardown failed"; call: "fail"), or a pass
when every phase passed, with the failure's own message.

The chdir cases investigate tests/cases/case_chdir.py and compare the named cause with the one
found for the same lost update without a chdir.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from helpers import AFFIDAVIT, CASES, PYTHON, REPO, describe, engine, engine_env

INI = """\
[pytest]
asyncio_default_fixture_loop_scope = function
"""

# The recording plugin: pytest's own per-phase reports, as pytest made them.
PHASES_PLUGIN = """\
import json, os

def pytest_runtest_logreport(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    message = crash.message if crash is not None else (str(report.longrepr) if report.longrepr else "")
    with open(os.environ["AFD_PHASES_OUT"], "a") as f:
        f.write(json.dumps({"when": report.when, "outcome": report.outcome, "message": message}) + "\\n")
"""

RUNS = 4
Phases = List[Dict[str, str]]


def project(tmp_path: Path, files: Dict[str, str], ini_extra: str = "") -> Path:
    """Writes pytest.ini (plus ini_extra lines) and files into tmp_path/proj."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pytest.ini").write_text(INI + ini_extra)
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    return root


def pytest_phases(root: Path, nodeid: str) -> Phases:
    """The test's reports under plain pytest, one per phase, in order."""
    plugin_dir = root.parent / "plugin"
    plugin_dir.mkdir(exist_ok=True)
    (plugin_dir / "afd_phases.py").write_text(PHASES_PLUGIN)
    out = root.parent / "phases.jsonl"
    if out.exists():
        out.unlink()
    env = engine_env()
    env["PYTHONPATH"] = str(plugin_dir)
    env["AFD_PHASES_OUT"] = str(out)
    proc = subprocess.run(
        [str(PYTHON), "-m", "pytest", "-p", "no:affidavit", "-p", "no:cacheprovider", "-p", "afd_phases", "-rA", nodeid],
        cwd=root, env=env, capture_output=True, text=True, errors="replace", timeout=120, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode in (0, 1), describe(proc)
    phases = [json.loads(line) for line in out.read_text().splitlines()]
    assert [p["when"] for p in phases][:1] == ["setup"] and phases[-1]["when"] == "teardown", (phases, describe(proc))
    return phases


def expected(phases: Phases) -> Tuple[str, str]:
    """What one affidavit run must report for pytest's phases: (outcome, failure prefix and message)."""
    for p in phases:
        if p["outcome"] == "failed":
            if p["when"] == "call":
                return "fail", p["message"].splitlines()[0] if p["message"] else ""
            return "error", f"{p['when']} failed"
    if any(p["outcome"] == "skipped" for p in phases):
        return "skip", ""
    return "pass", ""


def affidavit_sample(root: Path, nodeid: str, *extra: str) -> Tuple["subprocess.CompletedProcess[str]", Dict[str, Any]]:
    proc = engine("sample", nodeid, "-n", str(RUNS), "--json", "--workers", "1", *extra, cwd=root, timeout=120,
                  workers=False)
    assert proc.returncode in (0, 1), describe(proc)
    return proc, json.loads(proc.stdout)


def assert_same_as_pytest(root: Path, nodeid: str, want: Optional[Tuple[str, str]] = None) -> Phases:
    """Runs nodeid under pytest and affidavit; asserts every affidavit run reports pytest's outcome
    (and, if want is given, that pytest's outcome is want: the case means what it says)."""
    phases = pytest_phases(root, nodeid)
    outcome, text = expected(phases)
    if want is not None:
        assert (outcome, text) == want, phases
    proc, data = affidavit_sample(root, nodeid)
    assert data["runs"] == RUNS, describe(proc)
    assert data["outcomes"][outcome] == RUNS, f"pytest: {phases}\naffidavit: {describe(proc)}"
    if outcome in ("fail", "error"):
        assert text in data["failure"], f"pytest: {phases}\naffidavit: {describe(proc)}"
        if outcome == "error":
            assert data["failure"].startswith(text), describe(proc)
    return phases


# ---- 1. every phase gets its report ----

ASYNC_HEAD = """\
import asyncio
import logging
import os
import pytest

"""

PHASE_CASES = {
    "tmp_path": """
        @pytest.mark.asyncio
        async def test_it(tmp_path):
            (tmp_path / "a.txt").write_text("x")
            await asyncio.sleep(0)
            assert (tmp_path / "a.txt").read_text() == "x"
        """,
    "tmpdir": """
        @pytest.mark.asyncio
        async def test_it(tmpdir):
            tmpdir.join("a.txt").write("x")
            await asyncio.sleep(0)
            assert tmpdir.join("a.txt").read() == "x"
        """,
    "tmp_path_factory": """
        @pytest.mark.asyncio
        async def test_it(tmp_path_factory):
            d = tmp_path_factory.mktemp("data")
            await asyncio.sleep(0)
            assert d.is_dir()
        """,
    "monkeypatch": """
        @pytest.mark.asyncio
        async def test_it(monkeypatch):
            monkeypatch.setenv("AFD_FIDELITY", "1")
            await asyncio.sleep(0)
            assert os.environ["AFD_FIDELITY"] == "1"
        """,
    "capsys": """
        @pytest.mark.asyncio
        async def test_it(capsys):
            print("hello")
            await asyncio.sleep(0)
            assert capsys.readouterr().out == "hello\\n"
        """,
    "caplog": """
        @pytest.mark.asyncio
        async def test_it(caplog):
            logging.getLogger("afd").warning("careful")
            await asyncio.sleep(0)
            assert "careful" in caplog.text
        """,
    "sync test with asyncio.run and tmp_path": """
        def test_it(tmp_path):
            async def body():
                await asyncio.sleep(0)
                return 7
            assert asyncio.run(body()) == 7
        """,
    "tmp_path, failing call": """
        @pytest.mark.asyncio
        async def test_it(tmp_path):
            await asyncio.sleep(0)
            assert tmp_path.name == "nope", "its own reason"
        """,
}


@pytest.mark.parametrize("case", list(PHASE_CASES))
def test_builtin_fixtures_get_pytests_outcome(tmp_path: Path, case: str) -> None:
    root = project(tmp_path, {"test_case.py": ASYNC_HEAD + textwrap.dedent(PHASE_CASES[case])})
    failing = "failing" in case
    assert_same_as_pytest(
        root, "test_case.py::test_it", ("fail", "AssertionError: its own reason") if failing else ("pass", "")
    )


REP_CALL_CONFTEST = """
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    setattr(item, "rep_" + rep.when, rep)
    return rep

@pytest.fixture
def verdict(request):
    yield
    # the documented pattern: a fixture's teardown looks at how the call went
    assert request.node.rep_setup.passed
    if request.node.rep_call.failed:
        raise RuntimeError("the call failed, seen from teardown")
"""


@pytest.mark.parametrize("passes", [True, False])
def test_rep_call_hookwrapper_sees_the_call(tmp_path: Path, passes: bool) -> None:
    test = ASYNC_HEAD + textwrap.dedent(f"""
        @pytest.mark.asyncio
        async def test_it(verdict):
            await asyncio.sleep(0)
            assert {passes!r}, "the call's own reason"
        """)
    root = project(tmp_path, {"conftest.py": REP_CALL_CONFTEST, "test_case.py": test})
    phases = assert_same_as_pytest(
        root, "test_case.py::test_it", ("pass", "") if passes else ("fail", "AssertionError: the call's own reason")
    )
    if not passes:  # the teardown saw the failed call too, under pytest
        assert phases[-1]["outcome"] == "failed" and "seen from teardown" in phases[-1]["message"], phases


FAIL_PASSING_CALL_CONFTEST = """
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    if rep.when == "call" and rep.passed:
        rep.outcome = "failed"
        rep.longrepr = "the plugin failed this passing call"
    return rep
"""


def test_a_plugins_makereport_can_fail_a_passing_call(tmp_path: Path) -> None:
    test = ASYNC_HEAD + textwrap.dedent("""
        @pytest.mark.asyncio
        async def test_it():
            await asyncio.sleep(0)
        """)
    root = project(tmp_path, {"conftest.py": FAIL_PASSING_CALL_CONFTEST, "test_case.py": test})
    assert_same_as_pytest(root, "test_case.py::test_it", ("fail", "the plugin failed this passing call"))


def test_a_project_that_turns_warnings_into_errors_runs_as_under_pytest(tmp_path: Path) -> None:
    """``filterwarnings = error`` in the ini (as async-lru and others set it): pytest warns when a
    plugin's package was imported before it could rewrite its asserts, and the worker imports
    affidavit before pytest starts; the warning must not become an error that stops the worker."""
    test = ASYNC_HEAD + textwrap.dedent("""
        @pytest.mark.asyncio
        async def test_it():
            await asyncio.sleep(0)
        """)
    root = project(tmp_path, {"test_case.py": test}, "filterwarnings =\n    error\n")
    assert_same_as_pytest(root, "test_case.py::test_it", ("pass", ""))


def test_a_lost_update_that_takes_tmp_path_is_explained(tmp_path: Path) -> None:
    """The flaky lost update with a tmp_path argument: reproduced and named, not 'fails under every
    schedule' (which is what a teardown error in every run looked like)."""
    proc = subprocess.run(
        [str(AFFIDAVIT), "investigate", f"{CASES}/case_chdir.py::test_deposits_with_tmp_path", "--json", "--workers", "2"],
        cwd=REPO, env=engine_env(), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1, describe(proc)
    data = json.loads(proc.stdout)
    assert data["verdict"] == "reproduced", describe(proc)
    assert data["cause"]["kind"] == "lost_update", describe(proc)
    assert data["failure"].startswith(f"{CASES}/case_chdir.py:") and "assert" in data["failure"], describe(proc)


LOGREPORT_CONFTEST = """
import os

def pytest_runtest_logreport(report):
    with open(os.environ["AFD_LOGREPORT_OUT"], "a") as f:
        f.write(f"{report.when} {report.outcome}\\n")
"""


def test_a_conftests_logreport_sees_every_phase(tmp_path: Path) -> None:
    """A conftest acting in pytest_runtest_logreport gets the three reports of every run, as it
    gets them under pytest."""
    test = ASYNC_HEAD + textwrap.dedent("""
        @pytest.mark.asyncio
        async def test_it(tmp_path):
            await asyncio.sleep(0)
        """)
    root = project(tmp_path, {"conftest.py": LOGREPORT_CONFTEST, "test_case.py": test})
    out = tmp_path / "logreport.txt"
    env = engine_env()
    env["AFD_LOGREPORT_OUT"] = str(out)
    proc = subprocess.run(
        [str(PYTHON), "-m", "pytest", "-p", "no:affidavit", "-p", "no:cacheprovider", "-q", "test_case.py::test_it"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, describe(proc)
    under_pytest = out.read_text().splitlines()
    assert under_pytest == ["setup passed", "call passed", "teardown passed"], under_pytest
    out.unlink()
    proc = subprocess.run(
        [str(AFFIDAVIT), "sample", "test_case.py::test_it", "-n", str(RUNS), "--json", "--workers", "1"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, describe(proc)
    assert out.read_text().splitlines() == under_pytest * RUNS, describe(proc)


# ---- 2. captured output is bytes ----

BYTES_TEST = ASYNC_HEAD + """\
import sys

@pytest.mark.asyncio
async def test_passes():
    sys.stdout.buffer.write(b"\\xff\\xfe not utf-8\\n")
    sys.stdout.flush()
    os.write(2, b"\\xc3\\x28 nor this\\n")
    await asyncio.sleep(0)

@pytest.mark.asyncio
async def test_fails():
    sys.stdout.buffer.write(b"\\xff\\xfe not utf-8\\n")
    await asyncio.sleep(0)
    assert 1 == 2, "its own reason"
"""


@pytest.mark.parametrize("addopts", ["", "-s", "--capture=fd", "--capture=sys", "--capture=tee-sys"])
@pytest.mark.parametrize("test", ["test_passes", "test_fails"])
def test_non_utf8_output_gets_pytests_outcome(tmp_path: Path, addopts: str, test: str) -> None:
    """pytest's default (fd) capture and -s take any bytes; its sys-level capture decodes them as
    UTF-8 and fails the test: affidavit does what pytest does with the user's capture option."""
    root = project(tmp_path, {"test_case.py": BYTES_TEST}, f"addopts = {addopts}\n" if addopts else "")
    want: Optional[Tuple[str, str]] = None
    if addopts in ("", "-s", "--capture=fd"):
        want = ("pass", "") if test == "test_passes" else ("fail", "AssertionError: its own reason")
    assert_same_as_pytest(root, f"test_case.py::{test}", want)


LEAK_TEST = ASYNC_HEAD + """\
import pathlib
import select

@pytest.mark.asyncio
async def test_it():
    marker = pathlib.Path(os.environ["AFD_LEAK_MARKER"])
    await asyncio.sleep(0)
    if not marker.exists():  # the first run: say something, then never finish
        marker.write_text("1")
        os.write(1, b"LEAKED-FROM-A-KILLED-RUN\\n")
        select.select([], [], [], 60)
"""

LEAK_CONFTEST = """
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    if "LEAKED-FROM-A-KILLED-RUN" in rep.capstdout:
        rep.outcome = "failed"
        rep.longrepr = "this run captured another run's output"
    return rep
"""


def test_a_killed_runs_output_is_not_the_next_runs(tmp_path: Path) -> None:
    root = project(tmp_path, {"conftest.py": LEAK_CONFTEST, "test_case.py": LEAK_TEST})
    env = engine_env()
    env["AFD_LEAK_MARKER"] = str(tmp_path / "marker")
    proc = subprocess.run(
        [str(AFFIDAVIT), "sample", "test_case.py::test_it", "-n", "3", "--json", "--workers", "1", "--timeout", "2"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1, describe(proc)
    data = json.loads(proc.stdout)
    assert (tmp_path / "marker").exists(), describe(proc)
    assert data["outcomes"]["hang"] == 1 and data["outcomes"]["pass"] == 2, describe(proc)


# ---- 4. a test that changes directory ----


def investigate_cause(nodeid: str) -> Dict[str, Any]:
    proc = subprocess.run(
        [str(AFFIDAVIT), "investigate", nodeid, "--json", "--workers", "2"],
        cwd=REPO, env=engine_env(), capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1, describe(proc)
    data = json.loads(proc.stdout)
    assert data["verdict"] == "reproduced" and data["cause"], describe(proc)
    return data


@pytest.mark.parametrize("test", ["test_deposits_after_chdir", "test_deposits_after_monkeypatch_chdir"])
def test_a_chdir_keeps_the_cause(test: str) -> None:
    base = investigate_cause(f"{CASES}/case_chdir.py::test_deposits")
    moved = investigate_cause(f"{CASES}/case_chdir.py::{test}")
    assert base["cause"]["kind"] == "lost_update", base["cause"]
    for key in ("kind", "resource", "await_site"):
        assert moved["cause"][key] == base["cause"][key], (key, moved["cause"], base["cause"])
    assert base["cause"]["await_site"].startswith(f"{CASES}/case_chdir.py:"), base["cause"]
    files = {op["file"] for op in moved["cause"]["operations"]}
    assert files == {f"{CASES}/case_chdir.py"}, moved["cause"]
    assert moved["failure"].startswith(f"{CASES}/case_chdir.py:"), moved["failure"]


# ---- 5. a conftest that overrides the event_loop_policy fixture ----

OWN_POLICY_CONFTEST = """
import asyncio
import pytest

class OwnLoop(asyncio.SelectorEventLoop):
    pass

class OwnPolicy(asyncio.DefaultEventLoopPolicy):
    _loop_factory = OwnLoop

@pytest.fixture(scope="session")
def event_loop_policy():
    return OwnPolicy()
"""

# The fixture's policy makes asyncio's own loops (a subclass keeping the loop factory): adopted.
STOCK_POLICY_CONFTEST = OWN_POLICY_CONFTEST.replace("    _loop_factory = OwnLoop\n", "    pass\n")

OWN_POLICY_TEST = ASYNC_HEAD + """\
@pytest.mark.asyncio
async def test_it():
    await asyncio.sleep(0)
"""


def test_an_overridden_event_loop_policy_is_named(tmp_path: Path) -> None:
    root = project(
        tmp_path, {"conftest.py": OWN_POLICY_CONFTEST, "test_case.py": OWN_POLICY_TEST},
        "filterwarnings = ignore::DeprecationWarning\n",
    )
    assert expected(pytest_phases(root, "test_case.py::test_it")) == ("pass", "")
    proc = subprocess.run(
        [str(AFFIDAVIT), "sample", "test_case.py::test_it", "-n", "2", "--workers", "1"],
        cwd=root, env=engine_env(), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, describe(proc)
    lines = [l for l in proc.stderr.splitlines() if l.startswith("affidavit: error: ")]
    assert len(lines) == 1, describe(proc)
    line = lines[0]
    assert "test_case.py::test_it ran its own event loop" in line, describe(proc)
    assert "conftest.OwnPolicy" in line and "event_loop_policy fixture is overridden at conftest.py:" in line, line
    assert "which affidavit does not control" in line and "is the test async" not in line, line


def test_an_overridden_policy_that_makes_asyncios_own_loops_is_adopted(tmp_path: Path) -> None:
    """A fixture's policy that keeps asyncio's loop factory makes affidavit's loop, as the default
    policy does (it was named before, as a loop of the project's own, and not explored)."""
    assert "OwnLoop" not in STOCK_POLICY_CONFTEST.split("class OwnPolicy")[1]
    root = project(
        tmp_path, {"conftest.py": STOCK_POLICY_CONFTEST, "test_case.py": OWN_POLICY_TEST},
        "filterwarnings = ignore::DeprecationWarning\n",
    )
    proc, data = affidavit_sample(root, "test_case.py::test_it")
    assert proc.returncode == 0 and data["outcomes"]["pass"] == RUNS, describe(proc)
    assert data["median_steps"] > 0, describe(proc)


def test_without_the_override_the_loop_is_affidavits(tmp_path: Path) -> None:
    """The control for the case above: the same test, no conftest, runs on affidavit's loop."""
    root = project(tmp_path, {"test_case.py": OWN_POLICY_TEST})
    proc, data = affidavit_sample(root, "test_case.py::test_it")
    assert proc.returncode == 0 and data["outcomes"]["pass"] == RUNS, describe(proc)
    assert data["median_steps"] > 0, describe(proc)
