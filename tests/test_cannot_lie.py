"""affidavit cannot lie: a test that passes under plain `python -m pytest` is never turned red (nor
called failing, found or reproduced) unless it has a bug stock asyncio can produce; a time
threshold crossed by a slow step is `timing_sensitive`, not red.

Each class of test a tool could wrongly call failing has a case in tests/cases/ that plain pytest
passes every time, which each test here checks first (plain pytest is the reference), and then
asks the engine (explore, sample, investigate, replay) or the plugin (--affidavit-explore) about:

1. the real clock: time.monotonic(), perf_counter(), time(), monotonic_ns() and loop.time() all
   advance across a sleep as on stock asyncio (case_real_clock.py), and a timed wait of the test's
   thread on a threading primitive moves them by what it waited (case_timed_waits.py);
2. threads in real time: a thread's 10 ms of work is done after the coroutine's 0.2 s sleep
   (case_real_threads.py);
3. copies of one test never overlap: a fixed port, a fixed file (case_fixed_resources.py);
4. a threshold is a threshold: a failure that needs a step longer than a timeout, or than the gap
   between two sleeps, is timing_sensitive, and every printed failing token replays k/k
   (case_thresholds.py);
5. a loop the project chose (a policy set by its conftest) is named, not replaced
   (own_policy/);
6. exploring leaves the user's files as plain pytest does, says the same thing twice, and its
   printed replay command carries the session's -o options (user_project/,
   case_unmarked_fresh_token.py).

Plugin sessions run in a project of their own under tmp_path (its store, its results file); engine
commands run in the repository on the cases' node ids, as the other tests do. Budgets are small:
30 schedules (10 for the thread cases, whose runs take 0.2 s of real time), 30 natural runs,
5 replays.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterable, List, Set, Tuple

import pytest

from helpers import AFFIDAVIT, CASES, PYTHON, REPO, Proc, describe, engine, engine_env, investigate
from test_explore_suite import outcomes, results, summary_lines

CLOCK = f"{CASES}/case_real_clock.py"
TIMED_WAITS = f"{CASES}/case_timed_waits.py"
CLOCK_TESTS = [
    "test_monotonic_advances_across_sleep",
    "test_perf_counter_advances_across_sleep",
    "test_wall_clock_advances_across_sleep",
    "test_monotonic_ns_advances_across_sleep",
    "test_monotonic_imported_at_module_top_advances_across_sleep",
    "test_loop_time_and_monotonic_advance_together",
    "test_time_sleep_between_monotonic_reads_inside_asyncio_run",
    "test_loop_time_is_the_monotonic_reading",
    "test_loop_time_moves_across_a_blocking_sleep_in_one_step",
    "test_a_deadline_on_the_monotonic_clock_awaited_with_call_at",
]
THREADS = f"{CASES}/case_real_threads.py"
AT_WORK = f"{CASES}/case_thread_at_work_when_delayed.py"
IDLE_THREADS = f"{CASES}/case_idle_threads.py"
IDLE_THREAD_TESTS = ["test_an_idle_anyio_worker_thread", "test_an_idle_executor_thread",
                     "test_a_thread_waiting_for_the_coroutine"]
ZERO_TOKEN = "afd1:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaacbvibx4"
THREAD_TESTS = [
    "test_thread_finishes_while_the_coroutine_sleeps",
    "test_executor_job_finishes_while_the_coroutine_sleeps",
    "test_to_thread_finishes_while_the_coroutine_sleeps",
    "test_a_loop_in_its_own_thread_keeps_real_time",
]
RESOURCES = f"{CASES}/case_fixed_resources.py"
THRESHOLDS = f"{CASES}/case_thresholds.py"
THRESHOLD_TESTS = ["test_wait_for_well_within_its_timeout", "test_the_short_sleep_wins_the_race",
                   "test_a_few_steps_finish_within_a_long_sleep",
                   "test_answered_within_its_budget_on_the_monotonic_clock", "test_an_entry_read_while_it_is_fresh",
                   "test_a_periodic_job_waits_its_interval", "test_a_shutdown_within_its_budget_over_a_loopback_socket",
                   "test_a_wait_for_a_slower_job_times_out", "test_a_short_timer_beside_a_long_wait_for",
                   "test_two_sleeps_at_one_line_of_different_lengths"]
REAL_WAIT = f"{CASES}/case_real_wait_threshold.py"
OWN_WAIT = f"{CASES}/case_stall_then_own_wait.py"
CLOCK_UNDER_TIMEOUT = f"{CASES}/case_clock_read_under_library_timeout.py"
OWN_POLICY = f"{CASES}/own_policy"
STOCK_POLICY = f"{CASES}/stock_policy"
USER_PROJECT = f"{CASES}/user_project"
UNMARKED = f"{CASES}/case_unmarked_fresh_token.py"
MODULE_DIR = f"{CASES}/case_module_dir.py"
SIGNALS = f"{CASES}/case_signals.py"
UNWOKEN = f"{CASES}/case_unwoken_loop.py"
ADDRESS_IDS = f"{CASES}/case_address_ids.py"
ORDER_DEPENDENT = f"{CASES}/case_order_dependent.py"
# a racy case (found failing), and one that is not but whose runs depend on threads in real time
REPEATED = [f"{CASES}/case_plain_lost_update.py::test_concurrent_deposits", THREADS]

EXPLORE_RUNS = "30"
# Runs of the thread cases really wait their 0.2 s (they should: that is the point), so they get fewer.
THREAD_RUNS = "10"
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


# ---- running pytest and the engine ----


def plain_pytest(cwd: Path, *args: str, timeout: float = 120) -> Proc:
    """`python -m pytest` as a user runs it (the plugin installed, not asked for anything)."""
    return subprocess.run([str(PYTHON), "-m", "pytest", "-p", "no:randomly", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=engine_env(), stdin=subprocess.DEVNULL)


def assert_passes_plainly(cwd: Path, *args: str, passed: int) -> None:
    """The reference: under the stock loop every one of these tests passes."""
    proc = plain_pytest(cwd, "-q", "-p", "no:cacheprovider", *args)
    assert proc.returncode == 0 and outcomes(proc) == {"passed": passed}, \
        f"the case must pass under plain pytest (the baseline), and does not:\n{describe(proc)}"


def explore_session(root: Path, *args: str, runs: str = EXPLORE_RUNS, timeout: float = 600) -> Proc:
    """`pytest --affidavit-explore=30` (or runs) in root. A test it turns red gets a short investigation
    (--affidavit-budget, 60 s by default): 5 s keeps a red session short, and a green one never uses it."""
    return plain_pytest(root, f"--affidavit-explore={runs}", "--affidavit-budget=5", "-q", *args,
                        timeout=timeout)


def json_lines(proc: Proc) -> List[Dict[str, Any]]:
    """A multi-test command's --json output: one document a line."""
    try:
        return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    except json.JSONDecodeError:
        pytest.fail(f"--json printed something that is not one JSON document a line\n{describe(proc)}")


def engine_docs(*args: str, cwd: Path = REPO, timeout: float = 240) -> Tuple[Proc, List[Dict[str, Any]]]:
    """A multi-test engine command with --json: its documents (exit 0 or 1: found or not)."""
    proc = engine(*args, "--json", cwd=cwd, timeout=timeout)
    docs = json_lines(proc)
    assert docs and proc.returncode in (0, 1, 4), describe(proc)  # 4: a failure seen, abstained
    return proc, docs


def found_failing(docs: Iterable[Dict[str, Any]]) -> List[str]:
    return [f"{d['nodeid']}: {d.get('verdict')} at run {d.get('failing_run')} ({d.get('schedule')}): {d.get('failure')}"
            for d in docs if d.get("found")]


def project(tmp_path: Path, files: Dict[str, str], name: str = "project") -> Path:
    """A project of its own: files maps each name in it to the file of the repository it copies."""
    root = tmp_path / name
    root.mkdir()
    (root / "pytest.ini").write_text(INI)
    for dest, src in files.items():
        shutil.copy(REPO / src, root / dest)
    return root


def assert_session_green(proc: Proc, passed: int, what: str) -> None:
    assert proc.returncode == 0 and outcomes(proc) == {"passed": passed}, \
        f"{what} pass under plain pytest; --affidavit-explore must leave them green\n{describe(proc)}"
    assert "fails under a controlled schedule" not in proc.stdout, describe(proc)


# ---- 1. the real clock ----


def test_real_clock_explore_finds_no_failure() -> None:
    assert_passes_plainly(REPO, CLOCK, passed=len(CLOCK_TESTS))
    proc, docs = engine_docs("explore", CLOCK, "--runs", EXPLORE_RUNS)
    assert sorted(d["nodeid"].split("::")[1] for d in docs) == sorted(CLOCK_TESTS), describe(proc)
    assert not found_failing(docs) and proc.returncode == 0, \
        "explore called tests failing that only read the real clock across a sleep (on stock asyncio " \
        "loop.time() is time.monotonic(), so they cannot fail):\n" + "\n".join(found_failing(docs))


def test_a_timed_wait_of_the_tests_thread_moves_its_clock() -> None:
    """A deadline from time.monotonic() polled with Condition.wait, Event.wait or Thread.join
    timeouts: on stock asyncio the clock moves while the thread waits. Each hung under the zero
    schedule (10 s, then 'failing schedule') before timed waits moved the run's clocks."""
    assert_passes_plainly(REPO, TIMED_WAITS, passed=3)
    proc, docs = engine_docs("explore", TIMED_WAITS, "--runs", "10")
    assert len(docs) == 3 and not found_failing(docs) and proc.returncode == 0, \
        "a timed wait whose deadline the test computed from the clock was called failing:\n" + \
        "\n".join(found_failing(docs)) + "\n" + describe(proc)


# one async test reading the clock across asyncio.sleep, one sync test blocking in time.sleep (the
# other clocks are explore's and the plugin's to check)
@pytest.mark.parametrize("name", ["test_monotonic_advances_across_sleep",
                                  "test_time_sleep_between_monotonic_reads_inside_asyncio_run"])
def test_real_clock_investigate_does_not_say_reproduced(name: str) -> None:
    nodeid = f"{CLOCK}::{name}"
    assert_passes_plainly(REPO, nodeid, passed=1)
    rc, data, err = investigate(nodeid, "--natural", "5", "--runs", EXPLORE_RUNS, "--replays", "3", timeout=240)
    assert data.get("verdict") in ("no_failure", "abstained") and rc in (0, 4), \
        f"investigate said {data.get('verdict')!r} (exit {rc}) of a test that reads the real clock and cannot fail " \
        f"on stock asyncio: {data.get('failure')}\n{err}"


def test_real_clock_plugin_leaves_the_tests_green(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_real_clock.py": CLOCK})
    assert_passes_plainly(root, passed=len(CLOCK_TESTS))
    assert_session_green(explore_session(root), len(CLOCK_TESTS), "tests that read the real clock")


# ---- 2. threads in real time ----


def test_threads_explore_finds_no_failure() -> None:
    assert_passes_plainly(REPO, THREADS, passed=len(THREAD_TESTS))
    proc, docs = engine_docs("explore", THREADS, "--runs", THREAD_RUNS)
    assert sorted(d["nodeid"].split("::")[1] for d in docs) == sorted(THREAD_TESTS), describe(proc)
    # abstaining (exit 4) is allowed: a schedule may stall a step until the thread's 10 ms of real
    # work no longer fit in the sleep, and that failure is said to need the thread, which is named;
    # so is timing_sensitive (exit 1): a step before the job starts stalled close to the 0.2 s sleep,
    # which a slow machine can do, is the sleep's threshold -- listed apart, never red
    red = [d for d in docs if d.get("found") and d.get("verdict") != "timing_sensitive"]
    assert not found_failing(red) and proc.returncode in (0, 1, 4), \
        "explore called tests failing whose thread finishes in 10 ms of real time while the coroutine " \
        "sleeps 0.2 s:\n" + "\n".join(found_failing(docs))
    for d in docs:
        if d.get("verdict") == "abstained":
            assert (d.get("confirm") or {}).get("thread"), f"an abstention that names no thread: {d}"


def test_a_long_delay_passes_in_real_time_only_while_a_thread_works() -> None:
    # a thread works 10 ms while the search delays a step by up to 30 s: realized whole, that delay
    # outlasted the run's hang limit (2 hangs in 30 runs, verdict abstained, 41 s before this)
    assert_passes_plainly(REPO, AT_WORK, passed=1)
    proc, docs = engine_docs("explore", AT_WORK, "--runs", EXPLORE_RUNS)
    assert len(docs) == 1 and proc.returncode == 0, describe(proc)
    assert docs[0]["outcomes"]["hang"] == 0 and docs[0]["verdict"] == "no_failure", docs[0]


def test_a_delay_beside_a_thread_that_works_throughout_passes_in_real_time_for_at_most_a_second() -> None:
    # A poller thread works until the test ends; the search stalls a step close to the test's 20 s
    # wait_for guard, and such a stall passed in real time whole: 2 of 30 runs outlasted the hang
    # limit, the verdict was abstained, the explore took 41 s (fc15's bridge suite: 250 s explored,
    # 2.8 s plain). Cut at 1 s, the stall never reaches the guard and the test is what it is.
    nodeid = f"{CASES}/case_thread_works_throughout.py::test_a_poller_works_beside_a_guarded_wait"
    assert_passes_plainly(REPO, nodeid, passed=1)
    proc, docs = engine_docs("explore", nodeid, "--runs", EXPLORE_RUNS)
    assert len(docs) == 1 and proc.returncode == 0, describe(proc)
    assert docs[0]["outcomes"]["hang"] == 0 and docs[0]["verdict"] == "no_failure", docs[0]


@pytest.mark.parametrize("name", IDLE_THREAD_TESTS)
def test_a_thread_that_waits_for_the_loop_leaves_its_clock_virtual(name: str) -> None:
    # Each case sleeps 10 s after its thread went idle (anyio's worker, an executor's, a thread
    # blocked on an Event the coroutine sets). A thread waiting, with no timeout, for another to wake
    # it cannot overtake the loop, so the clock may jump as with no thread. Counted as working (the
    # anyio worker and the Event's thread were; an idle executor kept the loop waiting by being
    # there), every run of the test waited its 10 s in real time: a hang at this 5 s limit. Real
    # work keeps real time: test_threads_explore_finds_no_failure, on threads that sleep.
    proc = engine("replay", ZERO_TOKEN, f"{IDLE_THREADS}::{name}", "-n", "2", "--timeout", "5000", "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 0 and data["outcomes"]["pass"] == 2, describe(proc)


def test_a_thread_being_started_keeps_the_clock_real() -> None:
    # A thread that starts another waits for it without a timeout, and the new one has no frame
    # until its first line runs: both look idle, and the clock jumped the 60 s timeout (a process
    # pool's manager thread starting its queue feeder: fc11's first contact, most zero runs)
    proc = engine("replay", ZERO_TOKEN, f"{CASES}/case_thread_starting.py::test_a_thread_that_starts_a_thread",
                  "-n", "12", "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 0 and data["outcomes"]["pass"] == 12, describe(proc)


def test_a_signal_the_test_sent_itself_is_seen_before_the_clock_jumps() -> None:
    # The signal's byte is in the self-pipe before the test awaits. The controlled loop jumped its
    # clock to the 5 s timeout without looking (TimeoutError under every schedule, red at a helper's
    # first contact), or, with nothing pending, called the run a deadlock.
    assert_passes_plainly(REPO, SIGNALS, passed=2)
    proc, docs = engine_docs("explore", SIGNALS, "--runs", "5")
    assert proc.returncode == 0 and [d["verdict"] for d in docs] == ["no_failure", "no_failure"], describe(proc)


def test_a_stall_before_a_thread_starts_is_the_sleeps_threshold_in_every_session() -> None:
    # A schedule that stalls the step before asyncio.to_thread's job starts until the 0.2 s sleep is
    # within 1 ms leaves the job's 10 ms of real work no room: what fails is the sleep's threshold
    # (timing_sensitive), which only a check a tenth short of it shows -- checked 1 ms short, the
    # thread's real time failed it again and the test was red in one session of two. Which schedule
    # a session meets must not hang on how the OS coalesced the thread's wake-ups of the loop (the
    # zero run had 15 or 16 steps, and pct spread its delays over that count). The job's thread is
    # still working when the sleep's timer fires: whether a replay fails is its speed (a token that
    # failed 3/3 confirmations replayed 4/5 on a loaded machine), so no token is printed.
    # On a machine loaded enough that the job's 10 ms of work can take the whole 0.2 s (make test
    # beside two CPU burners: load 5-7 on 2 cores), an earlier schedule fails first with the thread
    # merely slow: explore then abstains (exit 4), naming the thread, with no token -- what stock
    # asyncio on that machine would do too. That is no red and no lie; the threshold check below is
    # about the sessions that met the stall.
    nodeid = f"{THREADS}::test_to_thread_finishes_while_the_coroutine_sleeps"
    sessions = []
    for _ in range(2):
        proc, docs = engine_docs("explore", nodeid, "--runs", EXPLORE_RUNS)
        assert len(docs) == 1 and proc.returncode in (0, 1, 4), describe(proc)
        doc = docs[0]
        assert doc["verdict"] in ("timing_sensitive", "abstained"), f"neither the threshold nor the thread: {doc}"
        assert doc.get("token") is None, f"a token whose replays a thread's speed decides: {doc}"
        assert (doc.get("confirm") or {}).get("thread"), f"the thread is not named: {doc}"
        if doc["verdict"] == "timing_sensitive":
            assert "a real wait" in doc["timing"]["summary"], doc
            sessions.append((doc["verdict"], doc.get("failing_run")))
    assert len(set(sessions)) <= 1, f"two sessions of one explore command met the threshold differently: {sessions}"


def test_a_callback_a_thread_queues_with_call_soon_waits_for_the_loops_timer() -> None:
    # A thread sets an asyncio.Event 50 ms in (call_soon from the thread: the loop is not woken) and
    # the loop's only timer is 0.5 s away: on stock asyncio the waiter runs at the timer. The
    # controlled loop, waiting in slices because the thread worked, ran it after the slice in which it
    # was queued (woke after 0.058 s: red under the zero schedule, a failure stock never makes) --
    # and, by the same token, hid every bug of the kind ("the loop sleeps through Event.set() from a
    # thread"). The callback is named in what explore prints of a failing run.
    nodeid = f"{UNWOKEN}::test_the_waiter_runs_when_the_loop_wakes_for_its_timer"
    assert_passes_plainly(REPO, nodeid, passed=1)
    proc = engine("replay", ZERO_TOKEN, nodeid, "-n", "3", "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 0 and data["outcomes"]["pass"] == 3, describe(proc)


def test_a_callback_queued_with_call_soon_and_nothing_to_wake_the_loop_is_a_hang() -> None:
    # Stock asyncio blocks in select() forever here (no timer, no descriptor): the controlled loop ran
    # the callback and passed. Now a hang that says why, under the zero schedule.
    _, docs = engine_docs("explore", f"{UNWOKEN}::test_nothing_wakes_the_loop", "--strategy", "zero", "--runs", "1")
    doc = docs[0]
    assert doc["outcomes"]["hang"] == 1 and "call_soon, not call_soon_threadsafe" in doc["failure"], doc
    # the thread, and the user's line that called into the loop (Event.set in the driver)
    line = next(i for i, text in enumerate(Path(REPO / UNWOKEN).read_text().splitlines(), 1) if "event.set()" in text)
    assert (doc.get("confirm") or {}).get("unwoken") == f"driver (at {UNWOKEN}:{line})", doc
    # investigate says the same among its evidence (the natural run hangs until its 10 s limit, as
    # stock asyncio hangs)
    rc, data, err = investigate(f"{UNWOKEN}::test_nothing_wakes_the_loop", "--natural", "1", "--replays", "3")
    rows = [e for e in data.get("evidence", []) if "call_soon, not call_soon_threadsafe" in e.get("claim", "")]
    assert rows and f"the thread driver (at {UNWOKEN}:{line})" in rows[0]["measured"], f"exit {rc}: {data}\n{err}"


@pytest.mark.parametrize("name", THREAD_TESTS)
def test_threads_investigate_does_not_say_reproduced(name: str) -> None:
    nodeid = f"{THREADS}::{name}"
    assert_passes_plainly(REPO, nodeid, passed=1)
    rc, data, err = investigate(nodeid, "--natural", "3", "--runs", THREAD_RUNS, "--replays", "3", timeout=240)
    assert data.get("verdict") in ("no_failure", "abstained", "timing_sensitive") and rc in (0, 1, 4), \
        f"investigate said {data.get('verdict')!r} (exit {rc}) of a test whose thread is done in real time long " \
        f"before the coroutine looks: {data.get('failure')}\n{err}"
    if data["verdict"] == "abstained":  # whatever its replays did, a thread decides them: no token
        assert data.get("token") is None, f"a token whose replays a thread's speed decides: {data}"
        assert any("so no token is printed" in row["claim"] for row in data["evidence"]), data["evidence"]
    if data["verdict"] == "timing_sensitive":  # the sleep's threshold, never a race's cause
        assert data.get("cause") is None and data.get("timing"), data
        # the job's thread was still working when the sleep's timer fired: its speed decides each
        # replay (a token that failed 3/3 here replayed 4/5 on a loaded machine), so, as in explore,
        # no token is printed and the thread is named
        assert data.get("token") is None, f"a token whose replays a thread's speed decides: {data}"
        rows = [row["measured"] for row in data["evidence"] if "no token is printed" in row["claim"]]
        assert len(rows) == 1 and "with the thread " in rows[0], data["evidence"]
        assert rows[0].endswith("still working when a timer fired or a stall passed"), rows


def test_threads_plugin_leaves_the_tests_green(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_real_threads.py": THREADS})
    assert_passes_plainly(root, passed=len(THREAD_TESTS))
    assert_session_green(explore_session(root, runs=THREAD_RUNS), len(THREAD_TESTS),
                         "tests whose thread finishes in real time")


# ---- 3. copies of one test never overlap ----
# Each test below uses its own slot of the case (its own port; its project its own directory), so
# that they can run at the same time under pytest-xdist.


def resource_nodes(slot: str) -> List[str]:
    return [f"test_fixed_resources.py::test_fixed_port_held_across_a_sleep[{slot}]",
            f"test_fixed_resources.py::test_fixed_file_created_exclusively_across_a_sleep[{slot}]"]


def resource_project(tmp_path: Path, slot: str) -> Path:
    root = project(tmp_path, {"test_fixed_resources.py": RESOURCES})
    assert_passes_plainly(root, *resource_nodes(slot), passed=2)
    return root


def assert_no_lock_left(root: Path) -> None:
    left = sorted(p.name for p in root.glob(".case_fixed_resources.*.lock"))
    assert not left, f"a run left its exclusive file behind: {left}"


def test_sample_never_runs_two_copies_of_a_test_at_once(tmp_path: Path) -> None:
    root = resource_project(tmp_path, "sample")
    proc, docs = engine_docs("sample", *resource_nodes("sample"), "-n", "30", cwd=root)
    failed = [f"{d['nodeid']}: {d['failed']}/{d['runs']} failed" for d in docs if d["failed"]]
    assert not failed and proc.returncode == 0, \
        "sample's natural runs of a test holding a fixed port or file failed, which one pytest never does: " \
        f"copies of the test ran at the same time\n{failed}\n{describe(proc)}"
    assert {d["runs"] for d in docs} == {30}, docs
    assert_no_lock_left(root)


def test_explore_never_runs_two_copies_of_a_test_at_once(tmp_path: Path) -> None:
    root = resource_project(tmp_path, "explore")
    proc, docs = engine_docs("explore", *resource_nodes("explore"), "--runs", EXPLORE_RUNS, cwd=root)
    assert not found_failing(docs) and proc.returncode == 0, \
        "explore found a failure in a test holding a fixed port or file, which one pytest never sees: " \
        "copies of the test ran at the same time\n" + "\n".join(found_failing(docs))
    assert_no_lock_left(root)


def test_copies_run_side_by_side_only_while_they_keep_to_themselves(tmp_path: Path) -> None:
    """The runtime's audit hook sees a run take a fixed port or write a file outside its temporary
    places; a test whose runs do not runs two copies at once (a machine's second core), one that does
    runs one at a time, and says why."""
    root = project(tmp_path, {"test_fixed_resources.py": RESOURCES,
                              "test_private.py": f"{CASES}/case_private_resources.py"})
    nodes = resource_nodes("copies")
    assert_passes_plainly(root, "test_private.py", *nodes, passed=3)
    proc, docs = engine_docs("explore", "test_private.py", *nodes, "--runs", "20", "--workers", "2", cwd=root)
    copies = {d["nodeid"]: d["copies"] for d in docs}
    assert copies["test_private.py::test_keeps_to_its_own_files_and_ports"] == {"most_alive": 2, "shared": None}, \
        f"a test that keeps to tmp_path, tempfile and port 0 ran its copies one at a time\n{copies}"
    port, lock = (copies[n] for n in nodes)
    assert port["most_alive"] == 1 and "bound the fixed port" in (port["shared"] or ""), copies
    assert lock["most_alive"] == 1 and (lock["shared"] or "").startswith("wrote ") \
        and lock["shared"].endswith(".case_fixed_resources.copies.lock"), copies
    assert not found_failing(docs) and proc.returncode == 0, describe(proc)
    assert_no_lock_left(root)


def test_the_plugin_never_runs_two_copies_of_a_test_at_once(tmp_path: Path) -> None:
    root = resource_project(tmp_path, "plugin")
    proc = explore_session(root, *resource_nodes("plugin"))
    assert_session_green(proc, 2, "tests holding a fixed port or file")
    assert_no_lock_left(root)


# ---- 4. a threshold is a threshold ----


def test_explore_calls_a_crossed_threshold_timing_sensitive() -> None:
    assert_passes_plainly(REPO, THRESHOLDS, passed=len(THRESHOLD_TESTS))
    proc, docs = engine_docs("explore", THRESHOLDS, "--runs", EXPLORE_RUNS)
    assert sorted(d["nodeid"].split("::")[1] for d in docs) == sorted(THRESHOLD_TESTS), describe(proc)
    plain_failures = [f"{d['nodeid']}: verdict {d.get('verdict')!r}: {d.get('failure')}"
                      for d in docs if d.get("found") and d.get("verdict") != "timing_sensitive"]
    assert not plain_failures, \
        "a failure that needs one step to outlast a time threshold the test armed was reported as a plain " \
        "failure, not timing_sensitive:\n" + "\n".join(plain_failures)
    for d in docs:
        if d.get("found"):
            assert d.get("timing") and d["timing"].get("summary"), d


def test_a_threshold_is_named_by_the_deadline_the_failure_needs() -> None:
    """A stall past a 5 s wait_for outlasts a 10 ms timer on its way; passing below the 10 ms one
    says nothing of which decides. The summary names the deadline where the runs either side of the
    flip part (it named the first one crossed, the 10 ms timer, before)."""
    nodeid = f"{THRESHOLDS}::test_a_short_timer_beside_a_long_wait_for"
    lines = (REPO / THRESHOLDS).read_text().splitlines()
    wait_for_line = next(i for i, line in enumerate(lines, 1) if "wait_for(work(), 5)" in line)
    proc, docs = engine_docs("explore", nodeid, "--strategy", "pct", "--runs", "60")
    (doc,) = docs
    assert doc.get("verdict") == "timing_sensitive", describe(proc)
    timing = doc["timing"]
    assert timing["site"] == f"{THRESHOLDS}:{wait_for_line}" and timing["duration_us"] == 5_000_000, timing
    assert "the 5 s timer" in timing["summary"] and "10 ms" not in timing["summary"], timing


def test_a_deadline_a_stall_brought_within_a_real_waits_reach_is_no_failure() -> None:
    """Steps stalled to just short of a 30 s timeout, then a real socket's answer outlasts the rest:
    a threshold whatever the real wait's length, so never a failing schedule. Several sessions,
    since one session's verdict turns on real waits (before the fix about half of them were red)."""
    assert_passes_plainly(REPO, REAL_WAIT, passed=1)
    wrong = []
    for _ in range(4):
        proc, docs = engine_docs("explore", REAL_WAIT, "--runs", EXPLORE_RUNS)
        wrong += [f"verdict {d.get('verdict')!r} at run {d.get('failing_run')}: {d.get('failure')} "
                  f"(schedule {d.get('schedule')}, confirm {d.get('confirm')})"
                  for d in docs if d.get("verdict") not in ("no_failure", "timing_sensitive")]
        # such a failure replays as the real wait goes: its token is printed only if every replay failed
        wrong += [f"a token printed that failed {d['confirm']['failed']}/{d['confirm']['runs']} replays"
                  for d in docs if d.get("token") and d["confirm"]["failed"] < d["confirm"]["runs"]]
    assert not wrong, "a timeout reached by a real wait after a stall brought it within reach was called a " \
        "failure:\n" + "\n".join(wrong)


def test_a_timeout_stalls_brought_due_is_a_threshold(tmp_path: Path) -> None:
    """A step stalled to 1 ms short of a 1 s timeout, then the test's own 50 ms sleep: the timeout
    fires on time, outlasted by no step (a plain red before: 14 of sse-starlette's tests)."""
    assert_passes_plainly(REPO, OWN_WAIT, passed=1)
    proc, docs = engine_docs("explore", OWN_WAIT, "--runs", EXPLORE_RUNS)
    assert len(docs) == 1 and docs[0]["verdict"] in ("no_failure", "timing_sensitive"), describe(proc)
    if docs[0]["verdict"] == "timing_sensitive":
        assert "1 s timer" in docs[0]["timing"]["summary"], docs[0]
    root = project(tmp_path, {"test_own_wait.py": OWN_WAIT})
    assert_session_green(explore_session(root), 1, "a timeout the stalls brought due")


def test_the_systematic_search_stops_at_a_librarys_own_timeout(tmp_path: Path) -> None:
    """A step whose only pending timer is a library's 300 s timeout (loop.call_later, not asyncio's)
    and a 10 s max_age compared with time.time(): the search swept the step's delay up to that
    timeout's moment and the clock read failed -- a plain red before (aiohttp-session's
    test_with_same_path_domain). Every timer the program arms but a sleep's wake-up is a deadline
    the systematic search does not sweep to; what lies past it is the timing verdict's."""
    assert_passes_plainly(REPO, CLOCK_UNDER_TIMEOUT, passed=1)
    proc, docs = engine_docs("explore", CLOCK_UNDER_TIMEOUT, "--runs", EXPLORE_RUNS)
    assert len(docs) == 1 and docs[0]["verdict"] in ("no_failure", "timing_sensitive"), describe(proc)
    assert sum(level["at_deadline"] for level in docs[0]["systematic"]["levels"]) > 0, docs[0]["systematic"]
    root = project(tmp_path, {"test_clock_under_timeout.py": CLOCK_UNDER_TIMEOUT})
    assert_session_green(explore_session(root), 1, "a clock read under a library's own timeout")


@pytest.mark.parametrize("name", THRESHOLD_TESTS)
def test_investigate_calls_a_crossed_threshold_timing_sensitive(name: str) -> None:
    nodeid = f"{THRESHOLDS}::{name}"
    assert_passes_plainly(REPO, nodeid, passed=1)
    rc, data, err = investigate(nodeid, "--natural", "5", "--runs", EXPLORE_RUNS, "--replays", "3", timeout=240)
    assert data.get("verdict") in ("timing_sensitive", "no_failure"), \
        f"investigate said {data.get('verdict')!r} of a race-free test that fails only when a step outlasts a time " \
        f"threshold (cause: {(data.get('cause') or {}).get('kind')}): {data.get('failure')}\n{err}"
    if data["verdict"] == "timing_sensitive":
        assert data.get("cause") is None and data.get("timing"), data


def printed_replays(stdout: str) -> List[List[str]]:
    """The arguments after `affidavit replay` (TOKEN NODEID ...) of every replay line explore printed,
    as a shell would split them."""
    return [shlex.split(line.split("replay: affidavit replay ", 1)[1])
            for line in stdout.splitlines() if "replay: affidavit replay " in line]


def test_every_failing_token_explore_prints_replays_k_of_k(tmp_path: Path) -> None:
    """On the threshold cases, and on the cases of 2 and 3 (which explore should not find failing at
    all): whatever explore prints as a failing schedule must fail 5/5 when replayed."""
    root = project(tmp_path, {"test_thresholds.py": THRESHOLDS, "test_real_threads.py": THREADS,
                              "test_fixed_resources.py": RESOURCES})
    targets = ["test_thresholds.py", "test_real_threads.py", *resource_nodes("replay")]
    assert_passes_plainly(root, *targets, passed=len(THRESHOLD_TESTS) + len(THREAD_TESTS) + 2)
    proc = engine("explore", *targets, "--runs", "20", cwd=root, timeout=240)
    assert proc.returncode in (0, 1, 4), describe(proc)
    printed = printed_replays(proc.stdout)
    assert len(printed) == proc.stdout.count("token:  afd1:"), f"a printed token has no replay line\n{describe(proc)}"
    bad = []
    for args in printed:
        rep = engine("replay", *args, "-n", "5", "--json", cwd=root, timeout=120)
        doc = json_lines(rep)
        if rep.returncode != 1 or not doc or doc[0].get("failed") != 5:
            bad.append(f"{shlex.join(args)}: exit {rep.returncode}, {doc[0].get('failed') if doc else '?'}/5 failed "
                       f"{rep.stderr.strip()}")
    assert not bad, "a token explore printed as a failing schedule does not fail 5/5 when replayed:\n" + "\n".join(bad)


def test_the_plugin_keeps_a_crossed_threshold_green_and_lists_it_apart(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_thresholds.py": THRESHOLDS})
    assert_passes_plainly(root, passed=len(THRESHOLD_TESTS))
    proc = explore_session(root)
    assert_session_green(proc, len(THRESHOLD_TESTS), "race-free tests with a time threshold")
    lines = summary_lines(proc)
    for row in results(root):
        if row.get("found"):
            assert row.get("verdict") == "timing_sensitive", (row, describe(proc))
            assert any(l.startswith(f"affidavit:   {row['nodeid']}: fails only when")
                       for l in lines), f"{row['nodeid']} is not listed apart as timing_sensitive\n{describe(proc)}"


# ---- 5. a loop the project chose is named ----


def own_policy_project(tmp_path: Path) -> Path:
    root = project(tmp_path, {"conftest.py": f"{OWN_POLICY}/conftest.py",
                              "test_own_policy.py": f"{OWN_POLICY}/case_own_policy.py"})
    assert_passes_plainly(root, passed=2)
    return root


def test_the_plugin_names_a_loop_the_project_chose_and_leaves_its_tests_green(tmp_path: Path) -> None:
    root = own_policy_project(tmp_path)
    proc = explore_session(root)
    assert_session_green(proc, 2, "tests on the loop their conftest's policy makes")
    lines = summary_lines(proc)
    totals = re.match(r"affidavit: \d+ tests? explored.*, (\d+) not explored", lines[0]) if lines else None
    assert totals and totals.group(1) == "2", \
        f"both tests run on the project's own loop and must be counted as not explored\n{describe(proc)}"
    named = [l for l in lines if "not explored" in l and ("MyLoop" in l or "CustomPolicy" in l)]
    assert named, f"the reason they were not explored must name the project's loop or policy\n{describe(proc)}"


def test_a_policy_of_the_project_that_makes_asyncios_own_loops_is_explored(tmp_path: Path) -> None:
    # The project's policy subclasses the default one and changes only set_event_loop: its loops
    # are asyncio's own, which the controlled loop stands for, as under the default policy. Before,
    # the whole suite went unexplored, "brings its own loop class asyncio.unix_events.
    # _UnixSelectorEventLoop" (hikari at first contact: 809 of 809). Its policy stays in force.
    root = project(tmp_path, {"conftest.py": f"{STOCK_POLICY}/conftest.py",
                              "test_stock_policy.py": f"{STOCK_POLICY}/case_stock_policy.py"})
    assert_passes_plainly(root, passed=2)
    proc = explore_session(root)
    assert_session_green(proc, 2, "tests under their project's policy")
    lines = summary_lines(proc)
    assert lines and re.match(r"affidavit: 2 tests explored.*, 0 not explored", lines[0]), describe(proc)


def test_explore_does_not_call_a_test_on_the_projects_loop_failing() -> None:
    path = f"{OWN_POLICY}/case_own_policy.py"
    assert_passes_plainly(REPO, path, passed=2)
    proc = engine("explore", path, "--runs", EXPLORE_RUNS, "--json", timeout=240)
    docs = json_lines(proc)
    assert proc.returncode not in (1, 3) and not found_failing(docs), \
        "explore called tests failing that pass on the loop their project chose (it ran them on another loop):\n" \
        + "\n".join(found_failing(docs)) + f"\n{describe(proc)}"


def test_explore_names_a_loop_class_with_its_own_clock_or_iteration() -> None:
    """looptime's shape: the project subclasses the loop it is given and tells its own time() or runs
    its own _run_once(); affidavit's iteration would overrule both, so the loop is named, not run.
    The loop then runs as asyncio's: by the project's clock and select() (a fast-forwarding loop's
    3 s took 3 real seconds, and its end of an endless wait was called a deadlock), with the real
    clocks real (a thread's 50 ms read 1 us)."""
    case = f"{CASES}/case_own_loop_class.py"
    assert_passes_plainly(REPO, case, passed=5)
    proc = engine("explore", case, "--runs", "5", "--json", cwd=REPO, timeout=120)
    assert proc.returncode == 0 and not found_failing(json_lines(proc)), describe(proc)
    for name in ("OffsetClockLoop", "CountingLoop", "FastForwardLoop", "EndOfTimeLoop", "RealClocksLoop"):
        assert f"{name} under the event loop policy" in proc.stderr + proc.stdout, describe(proc)


# ---- 6. the user's files; the same answer twice; the replay line ----

Snapshot = Dict[str, Tuple[Any, ...]]
PRIVATE = (".affidavit", ".pytest_cache")  # affidavit's store and pytest's cache


def snapshot(root: Path) -> Snapshot:
    """Every path under root but PRIVATE: its kind, and for a file its size, hash, link count, mode and
    modification time."""
    out: Snapshot = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir.parts and rel_dir.parts[0] in PRIVATE:
            continue
        for name in dirnames:
            out[str(rel_dir / name)] = ("dir",)
        for name in filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else ""
            out[str(rel_dir / name)] = ("file", st.st_size, digest, st.st_nlink, st.st_mode, st.st_mtime_ns)
    return {k: v for k, v in out.items() if Path(k).parts[0] not in PRIVATE}


def changes(before: Snapshot, after: Snapshot) -> Set[Tuple[str, str]]:
    out = {(p, "added") for p in after.keys() - before.keys()} | {(p, "removed") for p in before.keys() - after.keys()}
    return out | {(p, "changed") for p in before.keys() & after.keys() if before[p] != after[p]}


def test_exploring_leaves_the_users_files_as_plain_pytest_does(tmp_path: Path) -> None:
    files = {"test_resources.py": f"{USER_PROJECT}/case_resources.py", "resource.txt": f"{USER_PROJECT}/resource.txt"}
    explored, plain = project(tmp_path, files, "explored"), project(tmp_path, files, "plain")
    before_explored, before_plain = snapshot(explored), snapshot(plain)
    plain_run = plain_pytest(plain, "-q")
    assert plain_run.returncode == 0 and outcomes(plain_run) == {"passed": 2}, describe(plain_run)
    session = explore_session(explored)
    by_explore, by_plain = changes(before_explored, snapshot(explored)), changes(before_plain, snapshot(plain))
    assert by_explore == by_plain, \
        f"--affidavit-explore changed the user's files where plain pytest does not: {sorted(by_explore - by_plain)}; " \
        f"plain pytest's changes it did not make: {sorted(by_plain - by_explore)}\n{describe(session)}"
    # what the explored runs did to the files, the tests saw: the session must be as green as plain pytest
    assert_session_green(session, 2, "tests that write a file next to themselves and read a resource")


def test_a_wider_fixture_the_session_holds_is_not_made_again_under_it(tmp_path: Path) -> None:
    # A module fixture makes a directory of the project and removes it at the module's end. Copies
    # of a test that uses it, explored while the session holds it, made and removed it under the
    # session: the next test's plain run failed and the module's teardown errored (blacksheep's
    # tests/.out at first contact: 3 red). Those tests are listed, not explored, with the fixture
    # named (but the module's last, explored after the module's teardown). The first test's session
    # fixture (still held: the session's last test is not the first) leaves nothing outside pytest's temporary directories -- a probe file written and
    # removed again counted as a change before, as tempfile's first probe of /tmp did -- and is
    # explored. The session is as green as plain pytest.
    root = project(tmp_path, {"test_module_dir.py": MODULE_DIR})
    assert_passes_plainly(root, passed=3)
    session = explore_session(root, "-p", "no:cacheprovider")
    assert_session_green(session, 3, "tests that share a module fixture's directory")
    lines = "\n".join(summary_lines(session))
    # test_write_two is the module's last: the module fixture is torn down before it is explored
    assert "1 not explored: the session's module fixture out_dir is set up, and it changed .out (os.mkdir)" \
        in lines, describe(session)
    assert "2 tests explored" in lines, describe(session)
    assert not (root / ".out").exists(), "the module's teardown removes its directory, as under plain pytest"


def test_a_test_that_passes_only_after_the_one_before_it_is_listed_not_red(tmp_path: Path) -> None:
    # fc9's test_session_ttl.py at first contact: a module fixture counts connections, and the last
    # test asserts the count the tests before it left; each run of it alone makes the fixture afresh
    # and fails under the zero schedule (1 red). Alone under plain pytest it fails the same way:
    # not a schedule's failure, listed with that reason, the session as green as plain pytest.
    root = project(tmp_path, {"test_order.py": ORDER_DEPENDENT})
    assert_passes_plainly(root, passed=2)
    alone = plain_pytest(root, "-q", "-p", "no:cacheprovider", "test_order.py::test_the_second_request_counts_both")
    assert alone.returncode == 1, f"the case must fail alone under plain pytest\n{describe(alone)}"
    session = explore_session(root, "-p", "no:cacheprovider")
    assert_session_green(session, 2, "a test that depends on the test before it")
    lines = "\n".join(summary_lines(session))
    assert "1 not explored: it fails as explored when run alone under plain pytest" in lines, describe(session)


def test_a_session_started_below_its_rootdir_is_explored_with_its_own_import_path(tmp_path: Path) -> None:
    # `python -m pytest` started in suite/ puts suite/ on sys.path, and the rootdir (pytest.ini) is
    # the directory above: a test that imports a module beside its own directory collects plainly.
    # The workers start in the rootdir; before, they could not collect it and its tests went
    # unexplored, "cannot collect ... ModuleNotFoundError" (blacksheep at first contact: 8 tests).
    root = tmp_path / "project"
    (root / "suite" / "tests").mkdir(parents=True)
    (root / "pytest.ini").write_text(INI)
    (root / "suite" / "support.py").write_text("VALUE = 3\n")
    (root / "suite" / "tests" / "test_beside.py").write_text(
        "import asyncio\n\nimport pytest\nimport support\n\n\n@pytest.mark.asyncio\n"
        "async def test_reads_support() -> None:\n    await asyncio.sleep(0)\n    assert support.VALUE == 3\n")
    assert_passes_plainly(root / "suite", "tests", passed=1)
    proc = explore_session(root / "suite", "tests", "-p", "no:cacheprovider")
    assert_session_green(proc, 1, "a test that imports a module beside its directory")
    lines = summary_lines(proc)
    assert lines and re.match(r"affidavit: 1 test explored.*, 0 not explored", lines[0]), describe(proc)


def test_a_parameter_id_that_changes_between_processes_is_said_so(tmp_path: Path) -> None:
    # The worker's collection names the test with another address: it cannot be explored, and the
    # reason says why instead of "no test of that node id" (hikari at its second contact: 7 tests).
    root = project(tmp_path, {"test_address_ids.py": ADDRESS_IDS})
    assert_passes_plainly(root, passed=1)
    proc = explore_session(root, "-p", "no:cacheprovider")
    assert_session_green(proc, 1, "a test parametrized with an object's repr")
    assert "the workers collected its function under other parameter ids" in "\n".join(summary_lines(proc)), \
        describe(proc)


@pytest.mark.parametrize("target", REPEATED, ids=["lost_update", "threads"])
def test_the_same_explore_twice_gives_the_same_verdicts(target: str) -> None:
    def verdicts() -> List[Tuple[Any, ...]]:
        runs = THREAD_RUNS if target == THREADS else EXPLORE_RUNS
        proc = engine("explore", target, "--runs", runs, "--json", timeout=240)
        assert proc.returncode in (0, 1, 4), describe(proc)
        return [(d["nodeid"], d["found"], d.get("verdict"), d.get("failing_run"), d.get("token"))
                for d in json_lines(proc)]

    first, second = verdicts(), verdicts()
    if target != THREADS:
        assert any(found for _, found, *_ in first), f"the racy case should be found failing: {first}"
    else:
        # A run decided by how fast a thread really is (a timer firing while it works) is uncontrolled:
        # whether a session meets a failing one depends on the machine's load, and such a failure is
        # abstained, never red -- or, when a step before the thread starts stalls close to the sleep,
        # the sleep's threshold (timing_sensitive, listed apart). No red, the same tests.
        assert not any(found and verdict != "timing_sensitive" for _, found, verdict, *_ in first + second), \
            f"a thread race was called a failure:\n{first}\n{second}"
        # The token of a threshold crossed through a real wait is printed only if every replay alone
        # failed (README: "its token is printed ... only if every replay failed"), and those replays
        # go as the thread's real speed goes: the verdict and the run must agree, the token may be
        # withheld in one session and not the other. A schedule that failed once and passed its
        # replays alone (unconfirmed: the thread was slow that once, on a loaded machine) is the
        # same not-red answer as abstained (make test at 57f919b: the executor job's test was
        # unconfirmed in one session, green in the other).
        first, second = ([(n, f, "green" if v in ("abstained", "no_failure", "unconfirmed") else v, r)
                          for n, f, v, r, t in vs] for vs in (first, second))
    assert first and first == second, f"the same explore command said two different things:\n{first}\n{second}"


def test_the_plugins_replay_line_carries_the_sessions_o_options(tmp_path: Path) -> None:
    root = project(tmp_path, {"test_unmarked.py": UNMARKED})
    assert_passes_plainly(root, "-o", "asyncio_mode=auto", passed=1)
    proc = explore_session(root, "-o", "asyncio_mode=auto")
    # explored after its teardown, a red test shows its verdict as an error at teardown
    assert proc.returncode == 1 and outcomes(proc) == {"passed": 1, "error": 1}, \
        f"the unmarked race should turn red under exploration\n{describe(proc)}"
    lines = [l for l in proc.stdout.splitlines() if "replay: affidavit replay" in l]
    assert lines, describe(proc)
    for line in lines:
        assert "asyncio_mode=auto" in line, \
            f"the printed replay command drops the session's -o asyncio_mode=auto: {line.strip()!r}"
        # pasted as printed, it replays the failure: without the option the test does not even run
        command = line[line.index("affidavit replay"):]
        env = engine_env()
        env["PATH"] = f"{AFFIDAVIT.parent}{os.pathsep}{env.get('PATH', '')}"
        pasted = subprocess.run(["bash", "-c", f"{command} -n 3 --workers 2"], cwd=root, env=env, capture_output=True,
                                text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert pasted.returncode == 1 and "3 failed" in pasted.stdout, \
            f"the printed replay command, pasted, does not fail 3/3\n{describe(pasted)}"


# ---- a stock loop the test runs itself waits on real clocks ----


def test_a_stock_loop_the_test_runs_itself_is_named_not_hung() -> None:
    """aiorun's shape: the test sets asyncio's default policy and runs a stock loop, whose waits read
    time.monotonic. The clocks stay real until a controlled loop begins, so that loop ends in its 10 ms
    and is named (not controlled), never a hang called a failing schedule."""
    case = f"{CASES}/case_stock_loop_clock.py"
    assert_passes_plainly(REPO, case, passed=1)
    proc = engine("explore", case, "--runs", "5", "--json", cwd=REPO, timeout=120)
    docs = json_lines(proc)
    assert proc.returncode == 0 and not found_failing(docs), \
        "a stock loop's 10 ms wait hung under affidavit:\n" + describe(proc)
    assert "which affidavit does not control" in proc.stderr + proc.stdout, describe(proc)


def test_a_loop_in_another_thread_is_named_as_such(tmp_path: Path) -> None:
    """mocket's shape (asgiref's async_to_sync, starlette's TestClient): a sync test whose coroutine runs
    on asyncio's stock loop in a thread of a library's own. Not explored, and the reason says where the
    loop ran instead of calling asyncio's own loop class the test's."""
    case = f"{CASES}/case_loop_in_a_thread.py"
    assert_passes_plainly(REPO, case, passed=1)
    proc = engine("explore", case, "--runs", "5", cwd=REPO, timeout=120)
    assert proc.returncode == 0, describe(proc)
    assert "in the thread 'ThreadPoolExecutor-" in proc.stderr and "not the test's" in proc.stderr, describe(proc)
    root = project(tmp_path, {"test_portal.py": case})
    session = explore_session(root)
    assert_session_green(session, 1, "a sync test running a coroutine in an executor thread")
    lines = summary_lines(session)
    assert any("1 not explored: the test's coroutines run on a loop in another thread" in l for l in lines), \
        describe(session)
    assert not any("brings its own loop class" in l for l in lines), describe(session)
