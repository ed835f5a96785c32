"""Integration tests of `affidavit investigate`: the named cause, the collision window, the controls.

Every example in examples/ must be explained with the right kind, resource and await line; the
window example's threshold is known in closed form (500 us); race-free controls must not produce a
concurrency cause. Each call is a subprocess from the repository root with a timeout.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Optional

import pytest

from golden import assert_matches_golden
from helpers import AFFIDAVIT, REPO, investigate


# (node id, kind, resource, await line)
EXPECTED = [
    ("examples/test_lost_update.py::test_concurrent_deposits", "lost_update", "BALANCE.amount",
     "examples/test_lost_update.py:17"),
    ("examples/test_taskgroup_read.py::test_report_is_finalized", "order_violation", "REPORT.status",
     "examples/test_taskgroup_read.py:20"),
    ("examples/test_event_flag.py::test_send_after_open", "order_violation", "Event@examples/test_event_flag.py:11",
     "examples/test_event_flag.py:19"),
    ("examples/test_queue_drain.py::test_consumer_gets_everything", "order_violation",
     "Queue@examples/test_queue_drain.py:23", "examples/test_queue_drain.py:16"),
    ("examples/test_rare_flake.py::test_uses_fresh_token", "order_violation", "state.token",
     "examples/test_rare_flake.py:31"),
    ("examples/test_annotated.py::test_report_is_finalized", "order_violation", "report.status",
     "examples/test_annotated.py:21"),
    ("examples/test_window.py::test_reader_sees_write", "order_violation", "STATE.ready",
     "examples/test_window.py:26"),
    ("examples/test_deadlock.py::test_transfers_complete", "deadlock", None, "examples/test_deadlock.py:16"),
    ("examples/test_lock_order.py::test_transfers_within_deadline", "lock_order", None,
     "examples/test_lock_order.py:15"),
    ("examples/test_starvation.py::test_heartbeat_is_regular", "starvation", "event loop",
     "examples/test_starvation.py:21"),
    # fails under every schedule, yet a race: all fifty requests read before any writes
    ("examples/test_multi_resource.py::test_fifty_requests", "lost_update", "MultiResourceServer#0.sessions",
     "examples/test_multi_resource.py:17"),
]


@pytest.mark.parametrize("nodeid,kind,resource,await_site", EXPECTED, ids=[e[0].split("/")[1].split(".")[0] for e in EXPECTED])
def test_example_cause(nodeid: str, kind: str, resource: Optional[str], await_site: str) -> None:
    rc, data, err = investigate(nodeid)
    assert rc == 1, err
    assert data["verdict"] == "reproduced"
    assert data["token"].startswith("afd1:")
    assert data["replay"]["runs"] == 10 and data["replay"]["failed"] == 10, data
    cause = data["cause"]
    assert cause is not None, data
    assert cause["kind"] == kind, cause
    if resource is not None:
        assert cause["resource"] == resource, cause
    assert cause["await_site"] == await_site, cause
    assert cause["operations"], cause
    assert data["natural"]["runs"] == 50
    assert 0 <= data["natural"]["ci95"][0] <= data["natural"]["ci95"][1] <= 1
    # every other key and value as before the pipeline was reshaped (issue 19)
    assert_matches_golden(nodeid, data)


def test_lock_cycles_name_both_locks() -> None:
    for nodeid in ("examples/test_deadlock.py::test_transfers_complete",
                   "examples/test_lock_order.py::test_transfers_within_deadline"):
        _, data, err = investigate(nodeid)
        assert data["cause"] is not None, data
        locks = data["cause"]["resource"].split(", ")
        assert len(set(locks)) == 2, data["cause"]
        assert all(lock.startswith("Lock@") for lock in locks)


def test_deadlock_is_a_hang_with_its_wait_for_cycle() -> None:
    _, data, _ = investigate("examples/test_deadlock.py::test_transfers_complete")
    assert data["failure"].startswith("hang: deadlock")
    assert data["cause"] is not None, data
    summary = data["cause"]["summary"]
    assert "transfer#0 waits for" in summary and "transfer#1 waits for" in summary


def test_collision_window_matches_the_closed_form() -> None:
    """reader#0's first step delayed by 500 us or more makes the writer's timer fire second."""
    _, data, _ = investigate("examples/test_window.py::test_reader_sees_write")
    assert abs(data["window_us"] - 500.0) <= 1.0, data["window"]
    win = data["window"]
    assert win["task"] == "reader#0" and win["step"] == 0
    assert win["passes_at_us"] < 500.0 <= win["fails_at_us"]
    assert data["passing_replay"] == {"runs": 10, "passed": 10}
    # the causal pair is confirmed: forcing each order gives its outcome every time
    strengths = {e["claim"]: e["strength"] for e in data["evidence"]}
    assert any("forcing this order fails" in c and s == "confirmed" for c, s in strengths.items()), strengths


def test_rare_flake_window_is_the_main_steps_delay() -> None:
    """main arms its 5 ms timer at its step's start; the refresher's 1 ms timer is armed after that
    step: the refresh comes too late exactly when the step takes more than 4 ms."""
    _, data, _ = investigate("examples/test_rare_flake.py::test_uses_fresh_token")
    assert abs(data["window_us"] - 4000.0) <= 1.0, data["window"]
    assert data["window"]["task"] == "test_uses_fresh_token#0"


def test_starvation_names_the_blocking_line() -> None:
    _, data, _ = investigate("examples/test_starvation.py::test_heartbeat_is_regular")
    assert "time.sleep" not in data["cause"]["resource"]
    assert "examples/test_starvation.py:21" in data["cause"]["summary"]
    claims = [e["claim"] for e in data["evidence"]]
    assert any("blocking call" in c for c in claims)


@pytest.mark.parametrize("nodeid", [
    "tests/cases/case_fifo_correct.py::test_fifo_order",
    "tests/cases/case_locked.py::test_concurrent_deposits",
])
def test_race_free_controls_find_nothing(nodeid: str) -> None:
    rc, data, err = investigate(nodeid, "--runs", "300")
    assert rc == 0, err
    assert data["verdict"] == "no_failure"
    assert data["cause"] is None and data["token"] is None
    assert data["natural"]["failed"] == 0


def test_always_failing_test_is_not_a_race() -> None:
    rc, data, err = investigate("tests/cases/case_always_fails.py::test_price")
    assert rc == 1, err
    assert data["verdict"] == "deterministic"
    assert data["cause"] is None
    assert data["natural"]["failed"] == data["natural"]["runs"] == 50


def test_terminal_summary_is_short_and_complete() -> None:
    proc = subprocess.run(
        [str(AFFIDAVIT), "investigate", "examples/test_lost_update.py::test_concurrent_deposits", "--workers", "2"],
        cwd=REPO, capture_output=True, text=True, timeout=240,
    )
    out = proc.stdout
    assert proc.returncode == 1
    assert "REPRODUCED" in out
    assert "natural:" in out and "95% CI" in out
    assert "cause:    lost update on BALANCE.amount" in out
    assert "token:    afd1:" in out
    assert "replay:   affidavit replay afd1:" in out
    # the summary itself stays short; the pipeline's eight stage lines ("[k/8] name ...") follow it
    stages = [line for line in out.splitlines() if re.match(r"^  \[\d/8\] ", line)]
    assert len(stages) == 8
    assert len(out.splitlines()) - len(stages) <= 25


def test_bad_input_is_one_line() -> None:
    proc = subprocess.run([str(AFFIDAVIT), "investigate", "examples/test_nope.py::test_x", "--workers", "2"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = subprocess.run([str(AFFIDAVIT), "investigate", "--natural", "0", "x"], cwd=REPO, capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 2 and "--natural" in proc.stderr
    proc = subprocess.run([str(AFFIDAVIT), "investigate", "tests/cases/case_sync.py::test_sync", "--workers", "2"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "ran no asyncio event loop" in proc.stderr


def test_uncontrolled_entropy_abstains_and_says_why() -> None:
    rc, data, err = investigate("tests/cases/case_entropy.py::test_coin")
    assert rc == 4, err
    assert data["verdict"] == "abstained"
    assert data["cause"] is None
    assert 0 < data["replay"]["failed"] < data["replay"]["runs"] == 10
    # a schedule that fails some replays and not others is no failing schedule: no token, and why
    assert data["token"] is None, data
    rows = [r for r in data["evidence"] if "so no token is printed" in r["claim"]]
    assert len(rows) == 1 and rows[0]["measured"] == \
        f"replayed alone it failed {data['replay']['failed']}/10 times", data["evidence"]
    proc = subprocess.run([str(AFFIDAVIT), "investigate", "tests/cases/case_entropy.py::test_coin", "--workers", "2"],
                          cwd=REPO, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 4
    assert "ABSTAINED" in proc.stdout
    assert "unseeded entropy" in proc.stdout or "os.urandom" in proc.stdout
    assert "affidavit replay" not in proc.stdout and "token:" not in proc.stdout, proc.stdout


def test_interrupt_stops_cleanly() -> None:
    import os
    import signal
    import time

    proc = subprocess.Popen([str(AFFIDAVIT), "investigate", "tests/cases/case_hang.py::test_sleep_forever",
                             "--workers", "2", "--timeout", "30"], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        left = subprocess.run(["pgrep", "-f", "case_hang.py"], capture_output=True, text=True).stdout.split()
        left = [p for p in left if int(p) != os.getpid()]
        if not left:
            break
        time.sleep(0.1)
    assert not left, "processes left behind"


# ---- un-annotated code: accesses inferred from the traced lines and the source ----


def line_of(path: str, text: str) -> int:
    with open(REPO / path) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


PLAIN = [
    # (node id, kind, resource, await text) -- the same kinds and awaits as the annotated examples
    ("tests/cases/case_plain_lost_update.py::test_concurrent_deposits", "lost_update",
     'case_plain_lost_update.BALANCE["amount"]', "await asyncio.sleep(0.0005)"),
    ("tests/cases/case_plain_taskgroup_read.py::test_report_is_finalized", "order_violation",
     "case_plain_taskgroup_read.REPORT", "await asyncio.sleep(0.001)"),
    ("tests/cases/case_plain_window.py::test_reader_sees_write", "order_violation",
     "case_plain_window.STATE", "await asyncio.sleep(0.0015)"),
    ("tests/cases/case_plain_rare_flake.py::test_uses_fresh_token", "order_violation",
     'dict#0["token"]', "await asyncio.sleep(0.005)"),
]


@pytest.mark.parametrize("nodeid,kind,resource,await_text", PLAIN,
                         ids=[p[0].split("case_plain_")[1].split(".")[0] for p in PLAIN])
def test_unannotated_examples_get_the_same_cause(nodeid: str, kind: str, resource: str, await_text: str) -> None:
    rc, data, err = investigate(nodeid)
    assert rc == 1, err
    cause = data["cause"]
    assert cause is not None, data
    assert cause["kind"] == kind, cause
    path = nodeid.split("::")[0]
    assert cause["await_site"] == f"{path}:{line_of(path, await_text)}", cause
    assert cause["resource"] == resource, cause
    assert all(op["observed"] is False for op in cause["operations"]), cause["operations"]
    assert any(e["strength"] == "inferred" for e in data["evidence"])


def test_one_instance_shared_by_two_tasks_races() -> None:
    rc, data, err = investigate("tests/cases/case_instances.py::test_shared_counter")
    assert rc == 1, err
    assert data["cause"]["kind"] == "lost_update", data["cause"]
    assert data["cause"]["resource"] == "Counter#0.n"
    assert any(r["resource"] == "Counter#0.n" for r in data["races"]), data["races"]


def test_an_instance_each_does_not_race() -> None:
    rc, data, err = investigate("tests/cases/case_instances.py::test_counter_each")
    assert rc == 1, err
    # the test fails on the finishing order (DONE), not on the counters: each task has its own
    assert data["cause"]["resource"] == "case_instances.DONE", data["cause"]
    assert data["races"], "the shared list is a race"
    assert not any(r["resource"].startswith("Counter#") for r in data["races"]), data["races"]


# ---- --fix: LOCK for a lost update, gated; the user's files are never written ----


def apply_diff(diff: str, original: Path, dest: Path) -> None:
    dest.write_text(original.read_text())
    proc = subprocess.run(["patch", "-s", "-o", str(dest) + ".new", str(dest)], input=diff, text=True,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    Path(str(dest) + ".new").replace(dest)


@pytest.mark.parametrize("nodeid,kind,lock_line", [
    ("tests/cases/case_plain_lost_update.py::test_concurrent_deposits", "LOCK", "async with _affidavit_lock_BALANCE:"),
    ("tests/cases/case_instances.py::test_shared_counter", "LOCK", "async with self._affidavit_lock_n:"),
    # the seed's shape: two resources, one async with, the locks in sorted order
    ("examples/test_multi_resource.py::test_fifty_requests", "LOCK",
     "async with self._affidavit_lock_counters, self._affidavit_lock_sessions:"),
    # an order violation whose reader holds the writer's task: await it before the read
    ("tests/cases/case_plain_rare_flake.py::test_uses_fresh_token", "AWAIT_TASK", "+    await refresher  # affidavit"),
    # an order violation on module state without a handle: an Event per run, set after the write
    ("tests/cases/case_plain_taskgroup_read.py::test_report_is_finalized", "EVENT_GATE",
     "+        await _affidavit_REPORT_written.wait()"),
    ("tests/cases/case_plain_window.py::test_reader_sees_write", "EVENT_GATE",
     "+    _affidavit_STATE_written = asyncio.Event()  # affidavit: one per run"),
    # the reader tests the program's own Event's flag: wait on that event before the test
    ("examples/test_event_flag.py::test_send_after_open", "EVENT_GATE",
     "+        await self.connected.wait()  # affidavit: check only once it is set"),
    # a consumer checks a queue before the producer's last put: set once the producer's loop is done
    ("examples/test_queue_drain.py::test_consumer_gets_everything", "EVENT_GATE",
     "         await queue.put(item)\n+    if _affidavit_queue_written is not None:  # affidavit: the write is done\n"),
    # annotated code: the operations are placed at the traced lines they ended on
    ("examples/test_annotated.py::test_report_is_finalized", "EVENT_GATE",
     "+        await _affidavit_REPORT_written.wait()"),
    # `access(...)` annotations: placed at the neighbouring line that touches the annotated root
    ("examples/test_lost_update.py::test_concurrent_deposits", "LOCK",
     "+    async with _affidavit_lock_BALANCE:"),
    ("examples/test_window.py::test_reader_sees_write", "EVENT_GATE",
     "+        _affidavit_STATE_written.set()"),
    ("examples/test_taskgroup_read.py::test_report_is_finalized", "EVENT_GATE",
     "+        await _affidavit_REPORT_written.wait()"),
    # a deadlock: one function takes the two locks it is given, nested, in the order given
    ("examples/test_deadlock.py::test_transfers_complete", "LOCK_ORDER",
     "+    async with _affidavit_lock_a, _affidavit_lock_b:"),
])
def test_fix_proposes_a_gated_verified_fix_and_leaves_the_file_alone(nodeid: str, kind: str, lock_line: str,
                                                                      tmp_path: Path) -> None:
    path = REPO / nodeid.split("::")[0]
    before = path.read_bytes()
    # the mirror goes into TMPDIR: this test's own, as other suites may be verifying at the same time
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    rc, data, err = investigate(nodeid, "--fix", env={"TMPDIR": str(scratch)})
    assert rc == 1, err
    assert path.read_bytes() == before, "the user's file must be byte-identical without --apply"
    if nodeid.startswith("examples/"):  # every key and value as before issue 19's reshaping
        assert_matches_golden(nodeid, data, fix=True)
    fix = data["fix"]
    assert fix["kind"] == kind, fix
    assert lock_line in fix["diff"], fix["diff"]
    # candidates are tried smallest first; the proposal is the first that verified
    cands = fix["candidates"]
    assert cands == sorted(cands, key=lambda c: c["changed_lines"]), cands
    assert next(c for c in cands if c["verified"])["kind"] == kind, cands
    gate = {g["check"]: g for g in fix["gate"]}
    assert len(gate) == 16 and all(g["passed"] for g in gate.values()), gate
    # verified in a mirror of the project: the token passes, exploration and natural runs are clean
    tiers = fix["tiers"]
    assert fix["verified"] is True and fix["applied"] is False, tiers
    assert tiers["replay"]["runs"] == 10 and tiers["replay"]["passed"] == 10, tiers
    assert tiers["replay"]["token_failed_before"] == "10/10"
    assert tiers["exploration"]["schedules"] == 200 and tiers["exploration"]["failed_after"] == 0, tiers
    assert tiers["exploration"]["failed_before"] > 0, tiers
    assert tiers["natural"]["runs"] == 50 and tiers["natural"]["failed"] == 0
    assert tiers["natural"]["rate_below"] == pytest.approx(0.06)
    # the systematic tier (issue 21): the same enumeration after the fix, no schedule of it failing
    sys_after = tiers["systematic"]["after"]
    assert sys_after["max_delays"] == 2 and sys_after["runs"] >= 1, tiers["systematic"]
    assert all(level["failed"] == 0 for level in sys_after["levels"]), tiers["systematic"]
    assert not list(scratch.iterdir()), "the verification mirror is removed"
    # the regression test is part of the diff, and it was run: it fails on the bug, passes on the fix
    reg = fix["regression_test"]
    assert reg["node"] == nodeid + "_affidavit_replay", reg
    assert reg["fails_before"] is True and reg["passes_after"] is True, reg
    assert "_affidavit_replay = affidavit.replay(\"afd1:" in fix["diff"]
    # the patched module compiles (Python's own compile())
    fixed = tmp_path / path.name
    apply_diff(fix["diff"], path, fixed)
    compile(fixed.read_text(), str(fixed), "exec")


def test_fix_tries_the_smallest_candidate_first() -> None:
    # the test holds the writer's task (AWAIT_TASK, 1 line) and the state is this file's module
    # state (EVENT_GATE, 7 lines): the smaller is tried first, verifies, and the larger is not tried
    rc, data, err = investigate("tests/cases/case_two_fixes.py::test_uses_fresh_token", "--fix")
    assert rc == 1, err
    fix = data["fix"]
    assert [(c["kind"], c["tried"], c["verified"]) for c in fix["candidates"]] == [
        ("AWAIT_TASK", True, True), ("EVENT_GATE", False, False)], fix["candidates"]
    assert fix["candidates"][0]["changed_lines"] < fix["candidates"][1]["changed_lines"]
    assert fix["kind"] == "AWAIT_TASK" and fix["verified"] is True
    assert "+    await refresher  # affidavit" in fix["diff"]


def test_fix_falls_back_to_the_next_candidate_when_the_smallest_fails_verification() -> None:
    # the last handle to refresh_token is the task that writes nothing: awaiting it (1 line) is
    # gated but fails verification; the EVENT_GATE (7 lines) verifies and is proposed
    rc, data, err = investigate("tests/cases/case_wrong_handle.py::test_uses_fresh_token", "--fix")
    assert rc == 1, err
    fix = data["fix"]
    assert [(c["kind"], c["tried"], c["gate_passed"], c["verified"]) for c in fix["candidates"]] == [
        ("AWAIT_TASK", True, True, False), ("EVENT_GATE", True, True, True)], fix["candidates"]
    assert fix["kind"] == "EVENT_GATE" and fix["verified"] is True
    assert "await other" not in fix["diff"]
    # a failed verification leaves the failing token intact: it still replays, 10/10 failing
    proc = subprocess.run([AFFIDAVIT, "replay", data["token"], "tests/cases/case_wrong_handle.py::test_uses_fresh_token",
                           "--json"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["failed"] == 10


def test_starvation_gets_the_blocking_call_moved_to_a_thread() -> None:
    rc, data, err = investigate("examples/test_starvation.py::test_heartbeat_is_regular", "--fix")
    assert rc == 1, err
    fix = data["fix"]
    assert fix["kind"] == "OFFLOAD", fix
    assert "+        await asyncio.to_thread(time.sleep, 0.08)  # a synchronous reload" in fix["diff"]
    assert all(g["passed"] for g in fix["gate"]), fix["gate"]
    tiers = fix["tiers"]
    assert tiers["natural"]["runs"] == 50 and tiers["natural"]["failed"] == 0, tiers
    assert tiers["exploration"]["failed_after"] < tiers["exploration"]["failed_before"], tiers
    # verified means every tier passed, and nothing less
    every = (tiers["replay"]["passed"] == tiers["replay"]["runs"] and tiers["exploration"]["failed_after"] == 0
             and tiers["natural"]["failed"] == 0)
    assert fix["verified"] is every


def test_a_fix_that_fails_a_tier_is_reported_not_verified() -> None:
    # the lock order is fixed, but the test's own 50 ms deadline still fails under schedules that
    # delay a step by more: the exploration tier counts those, and the fix is not called verified
    rc, data, err = investigate("examples/test_lock_order.py::test_transfers_within_deadline", "--fix", "--apply")
    assert rc == 1, err
    fix = data["fix"]
    assert fix["kind"] == "LOCK_ORDER" and all(g["passed"] for g in fix["gate"]), fix
    tiers = fix["tiers"]
    assert tiers["replay"]["passed"] == tiers["replay"]["runs"] == 10, tiers
    assert tiers["exploration"]["failed_after"] > 0, tiers
    assert fix["verified"] is False and fix["applied"] is False
    assert "not verified" in fix["apply"] and not (REPO / "examples/test_lock_order.py.orig").exists()


def test_apply_writes_a_verified_fix_with_a_backup(tmp_path: Path) -> None:
    work = REPO / "tests" / "cases" / f"apply_{tmp_path.name}"
    work.mkdir()
    try:
        target = work / "case_plain_lost_update.py"
        original = (REPO / "tests/cases/case_plain_lost_update.py").read_bytes()
        target.write_bytes(original)
        rel = target.relative_to(REPO)
        rc, data, err = investigate(f"{rel}::test_concurrent_deposits", "--apply")
        assert rc == 1, err
        assert data["fix"]["verified"] is True and data["fix"]["applied"] is True, data["fix"]
        backup = Path(str(target) + ".orig")
        assert backup.read_bytes() == original
        patched = target.read_text()
        assert "async with _affidavit_lock_BALANCE:" in patched
        compile(patched, str(target), "exec")
        # a second --apply never overwrites the backup: it refuses (how strongly the fix is verified
        # does not change that: 20 exploration schedules a side)
        target.write_bytes(original)
        rc, data, err = investigate(f"{rel}::test_concurrent_deposits", "--apply", "--verify-runs", "20")
        assert data["fix"]["applied"] is False and "exists" in data["fix"]["apply"], data["fix"]
        assert target.read_bytes() == original and backup.read_bytes() == original
    finally:
        for p in work.iterdir():
            p.unlink()
        work.rmdir()


def test_an_order_dependent_assertion_gets_no_patch_and_says_why() -> None:
    """DONE == ["a", "b"] after two gathered workers: the only "fix" would weaken the assertion."""
    rc, data, err = investigate("tests/cases/case_instances.py::test_counter_each", "--fix")
    assert rc == 1, err
    assert data["cause"]["kind"] == "order_violation"
    assert data["fix"]["kind"] is None and data["fix"]["diff"] == ""
    assert "weaken the assertion" in data["fix"]["why_none"], data["fix"]
