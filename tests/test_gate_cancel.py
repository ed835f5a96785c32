"""`affidavit gate`: fixes that hide cancellation are refused (no_cancel_swallow, no_shield,
no_uncancel), in the JSON document and in the text, beside a real lock whose cleanup on
cancellation passes the cancellation on, which passes every check. The spellings and near misses
are in tests/c/test_gate_cancel.c; this is the command's end of them."""

from __future__ import annotations

import difflib
import json
import subprocess

from helpers import REPO, engine

TARGET = "examples/test_lost_update.py"
NEW_CHECKS = ["no_cancel_swallow", "no_shield", "no_uncancel"]
LOCKED = (
    '    async with LOCK:\n        current = BALANCE["amount"]\n        access("BALANCE.amount", "read")\n'
    '        await asyncio.sleep(0.0005)  # the ledger write takes a moment\n'
    '        BALANCE["amount"] = current + amount\n        access("BALANCE.amount", "write")\n')
BODY = (
    '    current = BALANCE["amount"]\n    access("BALANCE.amount", "read")\n'
    '    await asyncio.sleep(0.0005)  # the ledger write takes a moment\n'
    '    BALANCE["amount"] = current + amount\n    access("BALANCE.amount", "write")\n')


def diff_of(after: str) -> str:
    before = (REPO / TARGET).read_text()
    assert after != before
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{TARGET}",
                                        f"b/{TARGET}"))


def gate(diff: str, *args: str) -> "subprocess.CompletedProcess[str]":
    return engine("gate", "-", *args, input=diff, workers=False)


def checks(proc: "subprocess.CompletedProcess[str]") -> dict:
    return {c["check"]: c for c in json.loads(proc.stdout)["gate"]}


def locked(body: str) -> str:
    """The target with a real lock around the read and the write, then body's edit of that."""
    src = (REPO / TARGET).read_text()
    src = src.replace('BALANCE = {"amount": 0}\n', 'BALANCE = {"amount": 0}\nLOCK = asyncio.Lock()\n')
    assert BODY in src
    return src.replace(BODY, body)


def test_the_new_checks_are_listed_after_the_other_shortcuts() -> None:
    proc = gate(diff_of(locked(LOCKED)), "--json")
    names = [c["check"] for c in json.loads(proc.stdout)["gate"]]
    assert names[names.index("no_skip") + 1:names.index("no_skip") + 4] == NEW_CHECKS, names
    assert all(checks(proc)[n]["group"] == "refused shortcut" for n in NEW_CHECKS)


def test_a_lock_whose_cancellation_cleanup_re_raises_passes() -> None:
    body = LOCKED.replace(
        '        await asyncio.sleep(0.0005)  # the ledger write takes a moment\n',
        '        try:\n            await asyncio.sleep(0.0005)  # the ledger write takes a moment\n'
        '        except asyncio.CancelledError:\n            BALANCE["amount"] = current\n            raise\n')
    proc = gate(diff_of(locked(body)), "--json")
    assert proc.returncode == 0, proc.stdout
    assert all(c["passed"] for c in checks(proc).values()), proc.stdout


def test_a_swallowed_cancellation_is_refused() -> None:
    body = LOCKED.replace(
        '        await asyncio.sleep(0.0005)  # the ledger write takes a moment\n',
        '        try:\n            await asyncio.sleep(0.0005)  # the ledger write takes a moment\n'
        '        except asyncio.CancelledError:\n            BALANCE["amount"] = current\n')
    proc = gate(diff_of(locked(body)), "--json")
    assert proc.returncode == 1, proc.stdout
    got = checks(proc)
    assert not got["no_cancel_swallow"]["passed"], got["no_cancel_swallow"]
    assert "except asyncio.CancelledError" in got["no_cancel_swallow"]["reason"], got["no_cancel_swallow"]
    assert TARGET in got["no_cancel_swallow"]["reason"]
    assert got["no_shield"]["passed"] and got["no_uncancel"]["passed"]
    text = gate(diff_of(locked(body)))
    assert text.returncode == 1
    assert "policy gate FAILED" in text.stdout
    assert any(line.split()[:2] == ["FAIL", "no_cancel_swallow"] for line in text.stdout.splitlines()), text.stdout


def test_a_shield_around_the_awaited_call_is_refused() -> None:
    body = LOCKED.replace("        await asyncio.sleep(0.0005)", "        await asyncio.shield(asyncio.sleep(0.0005))")
    proc = gate(diff_of(locked(body)), "--json")
    assert proc.returncode == 1
    got = checks(proc)
    assert not got["no_shield"]["passed"] and "asyncio.shield(asyncio.sleep(0.0005))" in got["no_shield"]["reason"]
    assert got["no_cancel_swallow"]["passed"] and got["no_uncancel"]["passed"]


def test_an_uncancel_is_refused() -> None:
    body = LOCKED + "    asyncio.current_task().uncancel()\n"
    proc = gate(diff_of(locked(body)), "--json")
    assert proc.returncode == 1
    got = checks(proc)
    assert not got["no_uncancel"]["passed"] and "uncancel()" in got["no_uncancel"]["reason"]
    assert got["no_cancel_swallow"]["passed"] and got["no_shield"]["passed"]
