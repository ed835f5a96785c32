"""DRAIN_TASKS and AWAIT_TASK after a cancel, end to end: the engine on the small programs of
tests/cases/case_drain_background.py and case_cancel_cleanup.py proposes the fix, and it is
verified on every tier (replay, exploration, natural runs); where the library drops the task's
handle, no fix is proposed and the reason says so."""

from __future__ import annotations

from typing import Any, Dict

from helpers import investigate

DRAIN = "tests/cases/case_drain_background.py"
CANCEL = "tests/cases/case_cancel_cleanup.py"


def fix_of(nodeid: str, kind: str = "order_violation") -> Dict[str, Any]:
    rc, data, err = investigate(nodeid, "--fix", "--natural", "20", "--workers", "1", workers=False,
                                timeout=300)
    assert rc == 1, (rc, err)
    assert data["verdict"] == "reproduced", data
    assert data["cause"]["kind"] == kind, data["cause"]
    return data["fix"]


def assert_verified(fix: Dict[str, Any]) -> None:
    assert fix["verified"] is True, fix
    tiers = fix["tiers"]
    assert tiers["replay"]["passed"] == tiers["replay"]["runs"] > 0, tiers
    assert tiers["exploration"]["failed_before"] > 0 and tiers["exploration"]["failed_after"] == 0, tiers
    assert tiers["natural"]["failed"] == 0, tiers
    assert all(g["passed"] for g in fix["gate"]), fix["gate"]


def test_background_task_kept_in_a_set_is_drained_before_the_read() -> None:
    # The writer's task is spawned by submit(), which itself runs in a task gather made: the
    # handle's home, self._pending, is carried up to the test as `archive._pending`.
    fix = fix_of(f"{DRAIN}::test_submitted_items_are_stored")
    assert fix["kind"] == "DRAIN_TASKS", fix
    added = [line for line in fix["diff"].splitlines() if line.startswith("+") and "affidavit:" in line]
    assert added and added[0].startswith("+    await asyncio.gather(*list(archive._pending))"), fix["diff"]
    assert_verified(fix)


def test_dropped_handle_gets_no_fix_and_says_why() -> None:
    fix = fix_of(f"{DRAIN}::test_fired_item_is_stored")
    assert fix["kind"] is None, fix
    assert "keeps no handle" in fix["why_none"], fix


def test_caller_waits_for_the_task_it_cancelled() -> None:
    fix = fix_of(f"{CANCEL}::test_connection_back_after_deadline", "cancel_ordering")
    assert fix["kind"] == "AWAIT_TASK", fix
    assert "+        await asyncio.wait([inner])" in fix["diff"], fix["diff"]
    assert_verified(fix)
