"""affidavit check FILE --cls C --method M: races in a class, found without writing a test.

The targets are in tests/cases/check_targets.py and examples/test_multi_resource.py (the seed's
MultiResourceServer). Every bad argument is one line on stderr and exit code 2."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import pytest

from affidavit import check
from helpers import AFFIDAVIT, REPO, engine

TARGETS = "tests/cases/check_targets.py"
QUICK = ("--natural", "20", "--runs", "200", "--workers", "2")


def run_check(*args: str, env: Optional[Dict[str, str]] = None, timeout: float = 300) -> Tuple[int, Dict[str, Any], str]:
    proc = engine("check", *args, "--json", env=env, timeout=timeout, workers=False)
    data = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, data, proc.stderr


def test_the_seed_server_is_found_explained_and_fixed_with_two_sorted_locks() -> None:
    path = REPO / "examples" / "test_multi_resource.py"
    before = path.read_bytes()
    rc, data, err = run_check("examples/test_multi_resource.py", "--cls", "MultiResourceServer", "--method",
                              "handle_request", "--args", "'audit'", "--fix", "--workers", "2")
    assert rc == 1, err
    assert path.read_bytes() == before, "the user's file is not written without --apply"
    assert data["verdict"] == "reproduced", data
    assert data["check"] == {"file": "examples/test_multi_resource.py", "class": "MultiResourceServer",
                             "method": "handle_request", "calls": 50}
    # the oracle: 50 concurrent calls leave a state no serial order gives
    assert "not serializable: after 50 concurrent MultiResourceServer.handle_request calls" in data["failure"]
    assert "serially in the order they completed" in data["failure"]
    cause = data["cause"]
    assert cause["kind"] == "lost_update", cause
    assert cause["resource"] in ("MultiResourceServer#0.sessions", "MultiResourceServer#0.counters"), cause
    fix = data["fix"]
    assert fix["kind"] == "LOCK" and "+++ b/examples/test_multi_resource.py" in fix["diff"], fix
    # both dicts, one async with, the locks in sorted order (counters before sessions)
    assert "+        async with self._affidavit_lock_counters, self._affidavit_lock_sessions:" in fix["diff"], fix["diff"]
    assert fix["verified"] is True and fix["applied"] is False, fix["tiers"]
    tiers = fix["tiers"]
    assert tiers["replay"]["passed"] == tiers["replay"]["runs"] == 10, tiers
    assert tiers["exploration"]["failed_before"] > 0 and tiers["exploration"]["failed_after"] == 0, tiers
    assert tiers["natural"]["failed"] == 0, tiers


def test_a_correctly_locked_class_reports_no_failure(tmp_path: Path) -> None:
    # the store and the harness live outside the project: the harness's node id is absolute
    store = tmp_path / "store"
    rc, data, err = run_check(TARGETS, "--cls", "LockedServer", "--method", "handle_request", "--args", "'audit'",
                              *QUICK, env={"AFFIDAVIT_DIR": str(store)})
    assert rc == 0, err
    assert data["verdict"] == "no_failure", data
    assert data["natural"]["failed"] == 0 and data["natural"]["runs"] == 20
    assert (store / "check" / "test_check_LockedServer_handle_request.py").is_file()


def test_a_serializable_but_not_commutative_method_is_no_false_alarm() -> None:
    rc, data, err = run_check(TARGETS, "--cls", "Journal", "--method", "record", "--args", "i", *QUICK)
    assert rc == 0, err
    assert data["verdict"] == "no_failure", data


def test_the_journal_really_is_not_commutative() -> None:
    # what makes the previous test meaningful: the concurrent order is not the call order, so a
    # check that compared against the call order alone would have failed
    target = check.Target(str(REPO / TARGETS), "Journal", "record", None, "i", 20, None, None)

    async def once() -> Any:
        obj, completed = await target.concurrent()
        await target.run()  # and the oracle accepts every one of these runs
        return obj.entries, completed

    random.seed(1)
    entries, completed = asyncio.run(once())
    assert entries == completed and entries != list(range(20)), entries


def test_a_check_then_act_breaks_the_invariant_and_is_named_and_locked() -> None:
    rc, data, err = run_check(TARGETS, "--cls", "Account", "--method", "withdraw", "--args", "60", "--calls", "3",
                              "--invariant", "obj.balance >= 0", "--fix", *QUICK)
    assert rc == 1, err
    assert "invariant obj.balance >= 0 does not hold after 3 concurrent Account.withdraw calls" in data["failure"]
    # every interleaving fails (both checks run before either withdrawal), and that is still a race
    assert data["verdict"] == "reproduced", data
    cause = data["cause"]
    assert cause["kind"] == "check_then_act" and cause["resource"] == "Account#0.balance", cause
    assert "acts on what it read" in cause["summary"], cause
    fix = data["fix"]
    # the smallest verified candidate: the check kept, then made again under the lock (RECHECK, one
    # line smaller than a LOCK around the whole if)
    assert fix["kind"] == "RECHECK" and fix["verified"] is True, fix
    assert "+            async with self._affidavit_lock_balance:" in fix["diff"], fix["diff"]
    assert "+                if self.balance >= amount:" in fix["diff"], fix["diff"]
    assert "+                    self.balance -= amount" in fix["diff"], fix["diff"]
    assert "(check-then-act)" in fix["diff"]


def test_state_selects_what_is_compared() -> None:
    rc, data, err = run_check(TARGETS, "--cls", "Stamped", "--method", "hit", "--state", "obj.calls", *QUICK)
    assert rc == 0 and data["verdict"] == "no_failure", err
    rc, data, err = run_check(TARGETS, "--cls", "Stamped", "--method", "hit", *QUICK)
    assert rc == 1, err
    assert data["cause"]["kind"] == "lost_update" and data["cause"]["resource"] == "Stamped#0.hits", data["cause"]
    assert ".hits is 1, 50 serially" in data["failure"], data["failure"]


@pytest.mark.parametrize("args,message", [
    (["nothere.py", "--cls", "A", "--method", "b"], "no such file: nothere.py"),
    (["/etc/hostname", "--cls", "A", "--method", "b"], "/etc/hostname is outside the current directory"),
    (["tests/cases", "--cls", "A", "--method", "b"], "not a Python file: tests/cases"),
    (["tests/cases/case_syntax_error.py", "--cls", "A", "--method", "b"],
     "tests/cases/case_syntax_error.py does not parse: syntax error near line 8"),
    ([TARGETS, "--cls", "Nope", "--method", "go"], f"{TARGETS} has no class Nope at module level"),
    ([TARGETS, "--cls", "Plain", "--method", "nothing"], "class Plain has no method nothing (it has: total)"),
    ([TARGETS, "--cls", "Plain", "--method", "total"], "Plain.total (tests/cases/check_targets.py, line 76) is a plain def"),
    ([TARGETS, "--cls", "LockedServer", "--method", "handle_request"],
     "LockedServer.handle_request needs arguments (client_id): give --args 'EXPR'"),
    ([TARGETS, "--cls", "Broken", "--method", "go"], "Broken() raised ValueError: no database configured"),
    ([TARGETS, "--cls", "Account", "--method", "withdraw", "--args", "60", "--init", "Account("],
     "--init is not a Python expression: '(' was never closed: Account("),
    ([TARGETS, "--cls", "Account", "--method", "withdraw", "--args", "60", "--init", "Account(-1, 2, 3)"],
     "--init raised TypeError"),
    ([TARGETS, "--cls", "Account", "--method", "withdraw", "--args", "1 // (i - 3)"],
     "--args raised ZeroDivisionError: integer division or modulo by zero for i=3"),
    ([TARGETS, "--cls", "Account", "--method", "withdraw", "--args", "1", "--state", "obj.nothing"],
     "--state raised AttributeError"),
    ([TARGETS, "--cls", "Account", "--method", "withdraw", "--args", "1", "--calls", "1"],
     "expected a number of concurrent calls (2-10000) after: --calls"),
    ([TARGETS, "--method", "go"], "check needs --cls CLASS"),
    ([TARGETS, "--cls", "Account"], "check needs --method METHOD"),
    ([TARGETS, "--cls", "Acc-ount", "--method", "go"], "expected a Python name after: --cls"),
    (["--cls", "A", "--method", "b"], "check needs one file"),
])
def test_bad_arguments_are_one_line(args: list, message: str) -> None:
    proc = subprocess.run([str(AFFIDAVIT), "check", *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("affidavit: error: ") and message in lines[0], proc.stderr


def test_the_state_snapshot_compares_structure() -> None:
    class Box:
        def __init__(self, items: list) -> None:
            self.items = items
            self.lock = asyncio.Lock()  # not state

    assert check.snapshot(Box([1, {"a": 2}])) == check.snapshot(Box([1, {"a": 2}]))
    assert check.snapshot(Box([1, {"a": 2}])) != check.snapshot(Box([1, {"a": 3}]))
    assert check.snapshot({1, 2}) == check.snapshot({2, 1})
    a = ("state", check._attributes({"n": {"k": 1}}, 0))
    b = ("state", check._attributes({"n": {"k": 2}}, 0))
    assert check.describe_difference(a, b) == ".n['k'] is 1, 2"
