"""HANDOFF_CLEANUP end to end: a waiter handed a wake-up and cancelled before it resumed passes the
wake-up on through the setter and re-raises; the fix is gated, verified on every tier, and the
user's file stays byte-identical."""

from __future__ import annotations

from pathlib import Path

from helpers import REPO, investigate

CASE = "bench/realbugs/c_aiohttp_connector_limit"
NODE = f"{CASE}/test_c_aiohttp_connector_limit.py::test_request_without_timeout_completes[buggy]"
LIB = REPO / CASE / "c_aiohttp_connector_limit_buggy.py"


def test_cancelled_waiter_passes_its_wakeup_on(tmp_path: Path) -> None:
    before = LIB.read_bytes()
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    rc, data, err = investigate(NODE, "--fix", "--allow-src", "--natural", "50", env={"TMPDIR": str(scratch)},
                                timeout=600)
    assert rc == 1, err
    assert LIB.read_bytes() == before, "the user's file must be byte-identical without --apply"
    assert data["cause"]["kind"] in ("cancelled_handoff", "lost_wakeup"), data["cause"]
    fix = data["fix"]
    assert fix["kind"] == "HANDOFF_CLEANUP", fix
    assert fix["verified"] is True, fix["tiers"]
    gate = {g["check"]: g for g in fix["gate"]}
    assert all(g["passed"] for g in gate.values()), gate
    assert "passes on a hand-off" in gate["sync_primitive"]["reason"], gate["sync_primitive"]
    tiers = fix["tiers"]
    assert tiers["exploration"]["failed_before"] > 0 and tiers["exploration"]["failed_after"] == 0, tiers
    assert tiers["natural"]["failed"] == 0, tiers
    # the shape of the real fix: in the handler that already catches the waiter's cancellation,
    # a waiter that was handed the wake-up passes it on through the setter, then re-raises
    added = [line[1:] for line in fix["diff"].splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert "                if fut.done() and not fut.cancelled():" in added, fix["diff"]
    assert "                    self._release_waiter()" in added, fix["diff"]
    # right at the top of that handler, so the handler's own `raise` still ends it
    lines = fix["diff"].splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == "except BaseException:")
    assert lines[at + 2:at + 4] == ["+                if fut.done() and not fut.cancelled():",
                                    "+                    self._release_waiter()"], fix["diff"]
    code = [line for line in added if not line.strip().startswith("#")]
    assert not any("except" in line or "raise" in line for line in code), added
