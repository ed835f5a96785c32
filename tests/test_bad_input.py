"""The bad-input matrix: every way a user, a test or the machine can go wrong, end to end.

Each case runs the `affidavit` executable and asserts three things: the exit code, the message (the
one `affidavit: error:` line, or the run's failure text), and that no process is left behind.
Every process a case starts (the engine, its workers, the forked test processes and whatever the
test itself starts) inherits a marker unique to the case in its environment (AFD_BAD_MARKER), and
/proc is searched for it once the engine has returned; the interrupt cases first see the marked
processes alive, which shows the search finds them.

Budgets are small (a few runs, a 2 s timeout, 2 workers) so the file runs in a couple of minutes.
The test inputs are tests/cases/case_bad.py and the case files test_cli.py also uses.
"""

from __future__ import annotations

import errno
import json
import re
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

from helpers import AFFIDAVIT, CASES, REPO, WORKERS, Proc, describe, engine, engine_env
from test_cli import PASSING, TOKEN_PREFIX, ZERO_TOKEN, assert_usage_error, flip

MARK = "AFD_BAD_MARKER"
BAD = f"{CASES}/case_bad.py"
HANG = f"{CASES}/case_hang.py"
CRASH = f"{CASES}/case_crash.py"
PINGPONG = f"{BAD}::test_ping_pong_forever"

# ---- helpers ----


def survivors(marker: str) -> List[str]:
    """Live processes (not zombies) whose environment holds the marker."""
    needle = f"{MARK}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes():
                continue
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            continue
        if cmd:  # a zombie has no command line: it is gone, only not yet reaped
            found.append(f"{entry.name}: {cmd}")
    return found


def assert_nothing_left(marker: str, grace: float = 5.0) -> None:
    deadline = time.monotonic() + grace
    while True:
        left = survivors(marker)
        if not left:
            return
        if time.monotonic() >= deadline:
            for line in left:  # leave the machine clean for the next case before failing
                try:
                    os.kill(int(line.split(":")[0]), signal.SIGKILL)
                except OSError:
                    pass
            pytest.fail(f"{len(left)} processes left behind after affidavit returned:\n" + "\n".join(left[:20]))
        time.sleep(0.05)


def marked_env(marker: str, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    return engine_env({MARK: marker, **(extra or {})})


def afd(
    *args: str,
    cwd: Path = REPO,
    env: Optional[Dict[str, str]] = None,
    timeout: float = 120.0,
    workers: bool = True,
    preexec_fn: Any = None,
) -> Proc:
    """Runs affidavit (with --workers 2 unless workers is False) under a fresh marker and checks
    that nothing it started outlives it."""
    marker = uuid.uuid4().hex
    proc = engine(*args, cwd=cwd, env={MARK: marker, **(env or {})}, timeout=timeout, workers=workers,
                  preexec_fn=preexec_fn)
    assert_nothing_left(marker)
    return proc


def afd_json(*args: str, expect: int, **kw: Any) -> Tuple[Proc, Dict[str, Any]]:
    """affidavit --json: the exit code, nothing on stderr, one JSON object on stdout."""
    proc = afd(*args, "--json", **kw)
    assert proc.returncode == expect, describe(proc)
    assert proc.stderr == "", f"nothing belongs on stderr here\n{describe(proc)}"
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, describe(proc)
    return proc, json.loads(lines[0])


def sample(nodeid: str, *extra: str, expect: int, n: int = 3) -> Dict[str, Any]:
    _, data = afd_json("sample", nodeid, "-n", str(n), "--timeout", "2", *extra, expect=expect)
    assert data["runs"] == n, data
    return data


def interrupt(argv: List[str], sig: int, ready: Any, cwd: Path = REPO, extra_env: Optional[Dict[str, str]] = None,
              ) -> Tuple[int, str, str, str]:
    """Starts affidavit, waits until ready(marker) holds, sends sig; returns (exit code, stdout,
    stderr, marker)."""
    marker = uuid.uuid4().hex
    proc = subprocess.Popen([str(AFFIDAVIT), *argv, *WORKERS], cwd=cwd, env=marked_env(marker, extra_env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not ready(marker) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert ready(marker), f"affidavit never got ready; {survivors(marker)}"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode, out, err, marker


def one_warning(err: str, *words: str) -> str:
    """stderr is exactly one 'affidavit: warning:' line holding every word."""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("affidavit: warning: "), err
    for word in words:
        assert word.lower() in lines[0].lower(), (word, err)
    return lines[0]


# ---- node ids and collection ----


def test_nonexistent_test_in_existing_file() -> None:
    assert_usage_error(afd("sample", f"{CASES}/case_pass.py::test_does_not_exist", "-n", "2"), "not found",
                       "test_does_not_exist")


def test_nonexistent_file() -> None:
    assert_usage_error(afd("sample", f"{CASES}/case_missing.py::test_x", "-n", "2"), "not found", "case_missing.py")


def test_investigating_a_node_id_of_several_tests() -> None:
    # sample and explore run every test such an argument collects (test_many.py); investigate is of one
    assert_usage_error(afd("investigate", HANG, "--runs", "1"), "selects 3 tests", "give the node id of one test")


def test_a_directory_of_no_tests() -> None:
    assert_usage_error(afd("sample", "docs", "-n", "1"), "no test matches docs")


@pytest.mark.parametrize("nodeid", ["", "  "], ids=["empty", "blank"])
def test_empty_node_id(nodeid: str) -> None:
    """pytest would read it as the whole directory (and here fail on something else entirely)."""
    assert_usage_error(afd("sample", nodeid, "-n", "1"), "node id is empty")


def test_node_id_with_nothing_after_the_separator() -> None:
    assert_usage_error(afd("sample", f"{CASES}/case_pass.py::", "-n", "1"), "not found", "case_pass.py::")


@pytest.mark.parametrize(
    "args",
    [
        ("sample", f"{CASES}/case_sync.py::test_sync", "-n", "2"),
        ("explore", f"{CASES}/case_sync.py::test_sync", "--runs", "3"),
        ("replay", ZERO_TOKEN, f"{CASES}/case_sync.py::test_sync", "-n", "2"),
    ],
    ids=["sample", "explore", "replay"],
)
def test_sync_test_is_refused(args: Tuple[str, ...]) -> None:
    assert_usage_error(afd(*args), "event loop", "case_sync.py::test_sync")


def test_syntax_error_file() -> None:
    assert_usage_error(afd("sample", f"{CASES}/case_syntax_error.py::test_never_compiled", "-n", "2"), "SyntaxError",
                       "case_syntax_error.py")


def test_import_error_file() -> None:
    assert_usage_error(afd("sample", f"{CASES}/case_import_error.py::test_never_imported", "-n", "2"),
                       "ImportError", "case_import_error.py")


# ---- tokens ----


def test_every_garbled_token_character_is_detected() -> None:
    """Changing any one base32 character never runs a different schedule: it is refused."""
    for index in range(len(ZERO_TOKEN) - len(TOKEN_PREFIX)):
        line = assert_usage_error(afd("replay", flip(ZERO_TOKEN, index), PASSING, "-n", "1"), "invalid token")
        assert "checksum" in line or "malformed" in line, f"position {index}: {line}"


def test_truncated_token() -> None:
    line = assert_usage_error(afd("replay", ZERO_TOKEN[:-3], PASSING, "-n", "1"), "invalid token")
    assert "checksum" in line or "malformed" in line, line


def test_token_from_another_format_version() -> None:
    assert_usage_error(afd("replay", "afd2:" + ZERO_TOKEN[len(TOKEN_PREFIX):], PASSING, "-n", "1"),
                       "another affidavit format version")


def test_string_that_is_not_a_token() -> None:
    assert_usage_error(afd("replay", "hello", PASSING, "-n", "1"), "not an affidavit token")


# ---- the command line ----


@pytest.mark.parametrize(
    "args, words",
    [
        (("frobnicate", PASSING), ["unknown command", "frobnicate"]),
        (("sample", PASSING, "--frobnicate"), ["unknown option", "--frobnicate"]),
        (("sample",), ["node id"]),
        (("explore",), ["node id"]),
        (("replay", ZERO_TOKEN), ["token and a node id"]),
        (("sample", PASSING, "extra-positional"), ["not found", "extra-positional"]),
        (("replay", ZERO_TOKEN, PASSING, "extra-positional"), ["unexpected argument", "extra-positional"]),
        (("sample", PASSING, "-n", "0"), ["-n"]),
        (("sample", PASSING, "-n", "-3"), ["-n"]),
        (("sample", PASSING, "-n", "many"), ["-n"]),
        (("sample", PASSING, "-n"), ["-n"]),
        (("explore", PASSING, "--runs", "0"), ["--runs"]),
        (("explore", PASSING, "--strategy", "bogus"), ["bogus"]),
        (("explore", PASSING, "--strategy"), ["strategy"]),
        (("sample", PASSING, "--strategy", "zero"), ["--strategy"]),
        (("sample", PASSING, "--seconds", "3"), ["--seconds"]),
        (("explore", PASSING, "--seconds", "0"), ["--seconds"]),
        (("sample", PASSING, "--timeout", "0"), ["--timeout"]),
        (("sample", PASSING, "--timeout", "5000000"), ["--timeout", "at most 1000000"]),
        (("sample", PASSING, "--timeout", "nan"), ["--timeout"]),
        (("sample", PASSING, "--workers", "0"), ["--workers"]),
        (("sample", PASSING, "--max-steps", "0"), ["--max-steps"]),
        (("sample", PASSING, "--max-memory", "0"), ["--max-memory"]),
        (("sample", PASSING, "--max-memory", "lots"), ["--max-memory"]),
        (("sample", PASSING, "--max-memory"), ["--max-memory"]),
        (("explore", PASSING, "--seed", "-1"), ["--seed"]),
        (("investigate", PASSING, "--fix", "--verify-runs", "0"), ["--verify-runs"]),
        (("investigate", PASSING, "--fix", "--verify-runs", "all"), ["--verify-runs"]),
        (("explore", PASSING, "--verify-runs", "20"), ["unknown option", "--verify-runs"]),
    ],
    ids=lambda v: " ".join(v).replace(PASSING, "NODE").replace(ZERO_TOKEN, "TOKEN") if isinstance(v, tuple) else "",
)
def test_usage_error(args: Tuple[str, ...], words: List[str]) -> None:
    assert_usage_error(afd(*args, workers=False), *words)


def test_bad_python_is_a_one_line_error() -> None:
    assert_usage_error(afd("sample", PASSING, "-n", "1", "--python", "/nonexistent/python3"), "/nonexistent/python3")


# ---- tests that hang, crash or take their process down ----


@pytest.mark.parametrize("test", ["test_hang", "test_sleep_forever", "test_busy_loop"])
def test_hang_is_reported(test: str) -> None:
    """A deadlock, a far timer and a busy loop inside one step: each a hang with its last events."""
    data = sample(f"{HANG}::{test}", expect=1, n=2)
    assert data["failed"] == 2 and data["outcomes"]["hang"] == 2, data
    assert data["failure"].startswith("hang"), data
    assert "case_hang.py" in data["failure"], "the hang report should point at the test's line"


@pytest.mark.parametrize(
    "nodeid, words",
    [
        (f"{CRASH}::test_abort", ["SIGABRT"]),
        # under make test-asan, ASan's handler reports the SEGV and then aborts
        (f"{CRASH}::test_segfault", ["SIGABRT" if "ASAN_OPTIONS" in os.environ else "SIGSEGV"]),
        (f"{CRASH}::test_exit3", ["status 3"]),
        (f"{BAD}::test_os_exit_zero", ["status 0", "os._exit"]),
    ],
    ids=["abort", "segfault", "os._exit(3)", "os._exit(0)"],
)
def test_crash_is_reported_as_crash(nodeid: str, words: List[str]) -> None:
    data = sample(nodeid, expect=1, n=2)
    assert data["failed"] == 2 and data["outcomes"]["crash"] == 2, data
    assert data["failure"].startswith("crash: "), data
    for word in words:
        assert word in data["failure"], data


def test_sys_exit_in_a_test_is_reported_as_system_exit() -> None:
    """Plain pytest reports `sys.exit(3)` inside a test as a failure 'SystemExit: 3'."""
    data = sample(f"{CASES}/case_base_exception.py::test_sys_exit", expect=1, n=2)
    assert data["failed"] == 2, data
    assert "SystemExit" in data["failure"] and "SystemError" not in data["failure"], data


def test_keyboard_interrupt_raised_by_the_test_is_its_failure() -> None:
    data = sample(f"{BAD}::test_keyboard_interrupt", expect=1, n=2)
    assert data["outcomes"]["fail"] == 2, data
    assert data["failure"].startswith("tests/cases/case_bad.py:"), data
    assert "KeyboardInterrupt" in data["failure"] and "internal" not in data["failure"], data


def test_test_that_kills_its_worker() -> None:
    """Each run SIGKILLs the worker that forked it: a crash per run, and a new worker for the next."""
    data = sample(f"{BAD}::test_kills_its_worker", expect=1)
    assert data["outcomes"]["crash"] == 3, data
    assert data["failure"].startswith("crash: the worker died"), data


# ---- tests that start processes and threads ----


def test_fork_bomb_is_killed_with_its_run() -> None:
    """A bounded fork bomb (127 processes) that outlives the test: every one dies with the run."""
    data = sample(f"{BAD}::test_fork_bomb", expect=0)
    assert data["outcomes"]["pass"] == 3, data


def test_fork_bomb_in_a_test_that_hangs() -> None:
    data = sample(f"{BAD}::test_fork_bomb_hangs", expect=1, n=2)
    assert data["outcomes"]["hang"] == 2 and data["failure"].startswith("hang"), data


@pytest.mark.parametrize(
    "test",
    ["test_subprocess_left_running", "test_subprocess_in_its_own_session", "test_double_fork_daemon",
     "test_thread_never_ends"],
)
def test_what_a_passing_test_leaves_running_dies_with_the_run(test: str) -> None:
    """A subprocess, one that leaves the process group (setsid), a double-forked daemon, a thread
    that never ends: the test passes and nothing outlives its run."""
    data = sample(f"{BAD}::{test}", expect=0)
    assert data["outcomes"]["pass"] == 3, data


@pytest.mark.parametrize("test", ["test_asyncio_subprocess_hangs", "test_hangs_with_a_subprocess"])
def test_a_hang_with_a_subprocess_takes_the_subprocess_with_it(test: str) -> None:
    data = sample(f"{BAD}::{test}", expect=1, n=2)
    assert data["outcomes"]["hang"] == 2 and data["failure"].startswith("hang: no result within 2000 ms"), data


def test_thread_calling_back_is_named_uncontrolled() -> None:
    _, data = afd_json("replay", ZERO_TOKEN, f"{BAD}::test_thread_calls_back", "-n", "2", expect=0)
    assert data["outcomes"]["pass"] == 2, data
    assert "threads" in data["uncontrolled"], data


# ---- output and trace size ----


def test_megabytes_of_output() -> None:
    """16 MB through print and straight to file descriptors 1 and 2: none of it reaches affidavit's
    own output, and the runs pass."""
    proc, data = afd_json("sample", f"{BAD}::test_prints_megabytes", "-n", "2", expect=0)
    assert data["outcomes"]["pass"] == 2, data
    assert len(proc.stdout) < 4096, len(proc.stdout)


def test_megabytes_of_failure_text_are_cut() -> None:
    data = sample(f"{BAD}::test_fails_with_megabytes", expect=1, n=2)
    assert data["outcomes"]["fail"] == 2, data
    assert data["failure"].startswith("tests/cases/case_bad.py:"), data["failure"][:200]
    assert "AssertionError: yyyy" in data["failure"][:200], data["failure"][:200]
    assert len(data["failure"].encode()) <= 65536, len(data["failure"])


@pytest.mark.parametrize("test", ["test_huge_trace_events", "test_huge_trace_strings"])
def test_huge_trace_is_truncated_and_says_so(test: str) -> None:
    """More events (a million) or more text (6 MB of names) than a trace holds: the run still
    passes, and the truncation is in the JSON and the text, never silent."""
    data = sample(f"{BAD}::{test}", "--timeout", "30", expect=0, n=2)
    assert data["outcomes"]["pass"] == 2 and data["truncated_traces"] == 2, data
    proc = afd("replay", ZERO_TOKEN, f"{BAD}::{test}", "-n", "1", "--timeout", "30")
    assert proc.returncode == 0, describe(proc)
    assert "trace truncated at its size bound in 1 of 1 runs" in proc.stdout, describe(proc)


def test_small_traces_are_not_called_truncated() -> None:
    data = sample(PASSING, expect=0, n=2)
    assert data["truncated_traces"] == 0, data


# ---- resource bounds ----


@pytest.mark.parametrize("command", ["sample", "explore", "replay", "investigate"])
def test_step_limit_is_neither_pass_nor_fail(command: str) -> None:
    """Two tasks bouncing a token forever, stopped by --max-steps: counted as 'step-limit', never
    as a pass or a failure, and said in words in the text output."""
    args = {
        "sample": ("sample", PINGPONG, "-n", "2"),
        "explore": ("explore", PINGPONG, "--runs", "2"),
        "replay": ("replay", ZERO_TOKEN, PINGPONG, "-n", "2"),
        "investigate": ("investigate", PINGPONG, "--natural", "2", "--runs", "2"),
    }[command]
    env = {"AFFIDAVIT_DIR": str(REPO / "build" / "test-artifacts" / f"step-limit-{uuid.uuid4().hex}")}
    try:
        _, data = afd_json(*args, "--max-steps", "500", expect=0, env=env)
        if command == "investigate":
            assert data["step_limit_runs"] == 4 and data["natural"]["failed"] == 0, data
            assert data["verdict"] == "no_failure", data
        else:
            assert data["outcomes"]["step-limit"] == 2 and data["outcomes"]["pass"] == 0, data
            assert data["failed"] == 0 if "failed" in data else data["found"] is False, data
        if command == "explore":
            assert data["outcome"] == "step-limit", data
        text = afd(*args, "--max-steps", "500", env=env)
        assert text.returncode == 0, describe(text)
        assert "step limit reached (500 steps) in 2 of 2 runs" in text.stdout or \
            "step limit reached (500 steps) in 4 of 4 runs" in text.stdout, describe(text)
        assert "neither passes nor failures" in text.stdout, describe(text)
    finally:
        shutil.rmtree(env["AFFIDAVIT_DIR"], ignore_errors=True)


def test_memory_limit_gives_the_test_a_memory_error() -> None:
    """A test that holds 64 MB more at a time, under --max-memory 256: MemoryError, a failure of
    the test, and the worker survives it (every run reports)."""
    data = sample(f"{BAD}::test_eats_memory", "--max-memory", "256", expect=1)
    assert data["outcomes"]["fail"] == 3, data
    assert data["failure"].startswith("tests/cases/case_bad.py:") and data["failure"].endswith("MemoryError"), data


def test_limits_a_run_is_given() -> None:
    """CPU: the timeout (rounded down) plus 2 s, then SIGKILL a second later; no core dumps; data:
    the worker's own plus --max-memory."""
    data = sample(f"{BAD}::test_reports_its_limits", "--timeout", "3", "--max-memory", "100", expect=1, n=1)
    text = data["failure"]
    assert "'RLIMIT_CPU': (5, 6)" in text and "'RLIMIT_CORE': (0, 0)" in text, text
    data_limit = int(text.split("'RLIMIT_DATA': (")[1].split(",")[0])
    held_kb = int(text.split("vmdata_kb ")[1].split()[0])
    worker_held = data_limit - (100 << 20)  # what the worker held when it forked the run
    assert abs(worker_held - held_kb * 1024) < (64 << 20), "the limit is the budget above what the run holds"
    assert held_kb * 1024 < data_limit, text


def test_cpu_limit_is_a_hang_not_a_crash() -> None:
    """SIGXCPU (here from the limit the test lowered itself to 1 s, so the wall-clock budget of
    20 s is not what stops it) is reported as a hang that names the CPU limit."""
    _, data = afd_json("sample", f"{BAD}::test_burns_cpu_past_its_limit", "-n", "1", "--timeout", "20", expect=1)
    assert data["outcomes"]["hang"] == 1, data
    assert data["failure"].startswith("hang: cpu limit"), data
    assert "SIGXCPU" in data["failure"], data


# ---- the incident store ----


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_flaky.py").write_text((REPO / "examples" / "test_lost_update.py").read_text())
    return project


FLAKY = "test_flaky.py::test_concurrent_deposits"
INVESTIGATE = ("investigate", FLAKY, "--natural", "4", "--runs", "200", "--replays", "3")


def _reproduced(proc: Proc) -> Dict[str, Any]:
    """A reproduced investigation's JSON (exit 1) that says it was not stored."""
    assert proc.returncode == 1, describe(proc)
    data = json.loads(proc.stdout)
    assert data["verdict"] == "reproduced" and data["token"], data
    assert data["incident"] is None and data["report"] is None, data
    return data


@pytest.fixture()
def tmpfs(tmp_path: Path):
    """A 512 KB tmpfs (we run as root, in CI too), unmounted afterwards."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_full_disk_under_the_store(tmp_path: Path, tmpfs: Path) -> None:
    """The store on a full file system: the result is printed, one warning says why it was not
    stored, and what was in the store before is still there."""
    project = _project(tmp_path)
    store = tmpfs / "store"
    proc = afd(*INVESTIGATE, "--json", cwd=project, env={"AFFIDAVIT_DIR": str(store)})
    assert proc.returncode == 1 and json.loads(proc.stdout)["incident"] == 1, describe(proc)
    before = afd("ls", "--json", cwd=project, env={"AFFIDAVIT_DIR": str(store)}, workers=False)
    filler = tmpfs / "filler"
    try:
        with open(filler, "wb") as f:
            while True:
                f.write(b"\0" * 4096)
                f.flush()
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    proc = afd(*INVESTIGATE, "--json", cwd=project, env={"AFFIDAVIT_DIR": str(store)})
    _reproduced(proc)
    one_warning(proc.stderr, "not stored", "full")
    filler.unlink(missing_ok=True)
    after = afd("ls", "--json", cwd=project, env={"AFFIDAVIT_DIR": str(store)}, workers=False)
    assert after.returncode == 0 and json.loads(after.stdout) == json.loads(before.stdout), describe(after)


def test_store_past_the_file_size_limit(tmp_path: Path) -> None:
    """RLIMIT_FSIZE of 64 KB (a size-limited file): a write fails with EFBIG instead of killing
    affidavit with SIGXFSZ; the result is printed and one warning says why it was not stored."""
    project = _project(tmp_path)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))

    proc = afd(*INVESTIGATE, "--json", cwd=project, preexec_fn=limit)
    _reproduced(proc)
    one_warning(proc.stderr, "not stored")


@pytest.fixture()
def read_only(tmp_path: Path):
    """(project, its read-only view): a read-only bind mount (chmod does not stop root)."""
    project = _project(tmp_path)
    view = tmp_path / "read-only"
    view.mkdir()
    subprocess.run(["mount", "--bind", str(project), str(view)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True)
        yield project, view
    finally:
        subprocess.run(["umount", "-l", str(view)], check=True)


def test_read_only_project(read_only: Tuple[Path, Path]) -> None:
    """In a read-only checkout: investigate prints its result with one warning; the incidents
    stored before can still be listed, shown and reported; nothing is lost."""
    project, view = read_only
    first = afd(*INVESTIGATE, "--json", cwd=project)
    assert first.returncode == 1 and json.loads(first.stdout)["incident"] == 1, describe(first)
    proc = afd(*INVESTIGATE, "--json", cwd=view)
    _reproduced(proc)
    one_warning(proc.stderr, "not stored", "not writable", "read-only file system")
    listing = afd("ls", "--json", cwd=view, workers=False)
    assert listing.returncode == 0, describe(listing)
    assert [r["incident"] for r in json.loads(listing.stdout)] == [1], describe(listing)
    shown = afd("show", "1", cwd=view, workers=False)
    assert shown.returncode == 0 and FLAKY in shown.stdout, describe(shown)
    report = afd("report", "1", "--format", "json", cwd=view, workers=False)
    assert report.returncode == 0 and json.loads(report.stdout)["incident"] == 1, describe(report)
    missing = afd("show", "2", cwd=view, workers=False)
    assert_usage_error(missing, "no incident 2")


def test_read_only_project_without_a_store(read_only: Tuple[Path, Path]) -> None:
    _, view = read_only
    listing = afd("ls", cwd=view, workers=False)
    assert listing.returncode == 0 and "no incidents yet" in listing.stdout, describe(listing)
    assert_usage_error(afd("show", "1", cwd=view, workers=False), "no incident 1")


def test_store_directory_under_a_file(tmp_path: Path) -> None:
    """AFFIDAVIT_DIR names a path below a regular file: mkdir fails (ENOTDIR), one warning."""
    project = _project(tmp_path)
    (tmp_path / "plain-file").write_text("not a directory")
    proc = afd(*INVESTIGATE, "--json", cwd=project, env={"AFFIDAVIT_DIR": str(tmp_path / "plain-file" / "store")})
    _reproduced(proc)
    one_warning(proc.stderr, "not stored", "not a directory")


def test_corrupt_store(tmp_path: Path) -> None:
    """incidents.db is garbage: investigate prints its result with one warning and leaves the file
    exactly as it was (it may be someone's data); ls says what is wrong in one line."""
    project = _project(tmp_path)
    db = project / ".affidavit" / "incidents.db"
    db.parent.mkdir()
    garbage = b"this is not a database" * 1000
    db.write_bytes(garbage)
    proc = afd(*INVESTIGATE, "--json", cwd=project)
    _reproduced(proc)
    one_warning(proc.stderr, "not stored", "not an affidavit incident store")
    assert db.read_bytes() == garbage
    assert sorted(p.name for p in db.parent.iterdir()) == ["incidents.db"]
    listing = afd("ls", cwd=project, workers=False)
    assert listing.returncode == 3 and listing.stdout == "", describe(listing)
    assert listing.stderr.count("\n") == 1 and "not an affidavit incident store" in listing.stderr, describe(listing)


def test_store_of_another_schema_version(tmp_path: Path) -> None:
    project = _project(tmp_path)
    db = project / ".affidavit" / "incidents.db"
    db.parent.mkdir()
    con = sqlite3.connect(db)
    con.execute("create table future (x)")
    con.execute("pragma user_version=9")
    con.commit()
    con.close()
    proc = afd(*INVESTIGATE, "--json", cwd=project)
    _reproduced(proc)
    one_warning(proc.stderr, "not stored", "schema version 9")
    con = sqlite3.connect(db)
    assert con.execute("pragma user_version").fetchone()[0] == 9
    assert [r[0] for r in con.execute("select name from sqlite_master")] == ["future"]
    con.close()


# ---- interrupts ----


def test_a_greeting_that_fills_the_pipe_exactly_is_read_not_waited_for(tmp_path: Path) -> None:
    """A worker whose message ends exactly where a read fills the engine's 64 KiB buffer: the engine
    read again, blocking, for bytes the worker had no reason to send, and both waited forever (an
    explore of 3.10's test_asyncio.test_waitfor hung so). Here the "worker" greets with one 64 KiB
    frame (its payload is no greeting) and then sleeps: the engine must read it, refuse it and end."""
    fake = tmp_path / "python"
    fake.write_text("#!/usr/bin/env python3\n"
                    "import os, struct, time\n"
                    "payload = b'x' * (65536 - 5)\n"
                    "os.write(1, struct.pack('<I', len(payload) + 1) + bytes([1]) + payload)\n"
                    "time.sleep(120)\n")
    fake.chmod(0o755)
    proc = afd("sample", f"{HANG}::test_hang", "-n", "1", "--python", str(fake), timeout=60)
    assert proc.returncode == 3, describe(proc)
    assert proc.stderr.splitlines() == ["affidavit: error: the worker sent a malformed greeting"], describe(proc)


def test_ctrl_c_during_sample(tmp_path: Path) -> None:
    """SIGINT while a run hangs: exit 130, the runs so far (none) said, everything gone."""
    # Ready once the run has begun: a count of processes also counts what a worker starts while
    # it starts (a template, a symbolizer under ASan), and then the interrupt finds no run yet.
    def ready(marker: str) -> bool:
        return any(tmp_path.iterdir())

    rc, out, err, marker = interrupt(["sample", f"{HANG}::test_sleep_forever", "-n", "4", "--timeout", "30"],
                                     signal.SIGINT, ready, extra_env={"AFD_HANG_STARTED": str(tmp_path)})
    assert rc == 130, (rc, out, err)
    assert err.splitlines() == ["affidavit: interrupted after 0 runs (0 failed)"], err
    assert_nothing_left(marker)


def test_ctrl_c_during_investigate_keeps_the_runs_so_far(tmp_path: Path) -> None:
    """SIGINT during an investigation's natural runs: exit 130, and the runs done so far are
    printed and stored as an incident whose verdict says it was interrupted."""
    runs = tmp_path / "runs"
    runs.mkdir()
    store = tmp_path / "store"

    # A worker starts a run only once the engine has taken its previous result, so with 2 workers
    # at least (files - 2) runs have been counted when the test processes have left 6 files.
    def ready(marker: str) -> bool:
        return len(list(runs.iterdir())) >= 6

    rc, out, err, marker = interrupt(
        ["investigate", f"{BAD}::test_counts_runs", "--natural", "100000", "--json"], signal.SIGINT, ready,
        extra_env={"AFD_BAD_RUNS": str(runs), "AFFIDAVIT_DIR": str(store)})
    assert rc == 130, (rc, out, err)
    assert_nothing_left(marker)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("affidavit: interrupted after "), err
    data = json.loads(out)
    assert data["verdict"] == "interrupted", data
    assert 4 <= data["natural"]["runs"] <= len(list(runs.iterdir())), data
    assert data["natural"]["failed"] == 0, data
    assert data["natural"]["runs"] == int(lines[0].split("after ")[1].split()[0]), (data, err)
    assert isinstance(data["incident"], int), data
    listing = afd("ls", "--json", env={"AFFIDAVIT_DIR": str(store)}, workers=False)
    rows = json.loads(listing.stdout)
    assert [(r["incident"], r["verdict"], r["runs"]) for r in rows] == \
        [(data["incident"], "interrupted", data["natural"]["runs"])], rows


def test_sigterm_during_explore() -> None:
    # Runs are short: each forks a child that starts a `sleep` and passes, and the worker kills
    # the sleep. Five processes alive at one instant is a race a busy machine can lose for a
    # whole minute; a run that has started its subprocess at some point, with both workers up,
    # is what the signal must interrupt.
    seen_subprocess = []

    def ready(marker: str) -> bool:
        procs = survivors(marker)
        if any("sleep 300" in p for p in procs):
            seen_subprocess.append(True)
        return bool(seen_subprocess) and sum("affidavit.worker" in p for p in procs) >= 2

    # under the controlled loop the test's hour-long sleep is virtual: runs pass, each leaving a
    # subprocess for the worker to kill
    rc, out, err, marker = interrupt(["explore", f"{BAD}::test_hangs_with_a_subprocess", "--runs", "100000"],
                                     signal.SIGTERM, ready)
    assert rc == 130, (rc, out, err)
    assert re.fullmatch(r"affidavit: interrupted after \d+ runs \(0 failed\)\n", err), err
    assert_nothing_left(marker)


def test_sigkill_of_the_engine_leaves_nothing_behind() -> None:
    """The engine dies without a word (SIGKILL) while tests run with subprocesses of their own:
    its workers get SIGTERM from the kernel and take their test processes' groups with them."""
    def ready(marker: str) -> bool:
        # the engine, two workers, the one test process (runs of one test never overlap) and its `sleep`
        return sum("sleep 300" in p for p in survivors(marker)) >= 1

    rc, _, _, marker = interrupt(["sample", f"{BAD}::test_hangs_with_a_subprocess", "-n", "4", "--timeout", "30"],
                                 signal.SIGKILL, ready)
    assert rc == -signal.SIGKILL, rc
    assert_nothing_left(marker)
