"""The lock fixes of issue 20's item 5, end to end on small cases: RECHECK (double-checked lazy
init) and LOCK_CALLER (a read made in a helper, locked in the caller that makes it and the write),
each the fix proposed and verified on every tier."""

from __future__ import annotations

from typing import Any, Dict

from helpers import investigate


def verified_fix(nodeid: str) -> Dict[str, Any]:
    code, doc, err = investigate(nodeid, "--fix", "--natural", "30", timeout=400)
    assert doc, err
    assert doc["verdict"] == "reproduced", doc
    fix = doc["fix"]
    assert fix, doc
    return fix


def test_lazy_init_is_rechecked_under_a_lock() -> None:
    fix = verified_fix("tests/cases/case_lazy_init.py::test_one_login")
    assert fix["kind"] == "RECHECK", fix
    assert fix["verified"] is True, fix
    assert fix["tiers"]["exploration"]["failed_after"] == 0, fix
    # the check stays outside the lock and is made again inside it
    diff = fix["diff"]
    assert "+            async with self._affidavit_lock_token:" in diff, diff
    assert "+                if self.token is None:  # affidavit: checked again under the lock" in diff, diff


def test_a_read_in_a_helper_is_locked_in_the_caller() -> None:
    fix = verified_fix("tests/cases/case_lock_caller.py::test_deposits_add_up")
    assert fix["kind"] == "LOCK_CALLER", fix
    assert fix["verified"] is True, fix
    assert fix["tiers"]["exploration"]["failed_after"] == 0, fix
    # the lock spans deposit's statements that call the helper and write, not the helper itself
    diff = fix["diff"]
    assert "+        async with self._affidavit_lock_balance:" in diff, diff
    assert "+            current = self._current()\n" in diff, diff
    assert "+            self.balance = current + amount\n" in diff, diff
