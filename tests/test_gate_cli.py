"""`affidavit gate DIFF`: a unified diff checked against the policy, without writing anything."""

from __future__ import annotations

import difflib
import json
import subprocess

from helpers import REPO, engine

TARGET = "examples/test_lost_update.py"


def diff_of(path: str, after: str) -> str:
    before = (REPO / path).read_text()
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{path}", f"b/{path}"))


def gate(diff: str, *args: str) -> "subprocess.CompletedProcess[str]":
    return engine("gate", "-", "--json", *args, input=diff, workers=False)


def checks(proc: "subprocess.CompletedProcess[str]") -> dict:
    return {c["check"]: c for c in json.loads(proc.stdout)["gate"]}


def test_a_sleep_band_aid_is_refused() -> None:
    src = (REPO / TARGET).read_text()
    after = src.replace("    await asyncio.gather(deposit(10), deposit(20))\n",
                        "    await deposit(10)\n    await asyncio.sleep(0.01)\n    await deposit(20)\n")
    before_bytes = (REPO / TARGET).read_bytes()
    proc = gate(diff_of(TARGET, after))
    assert proc.returncode == 1, proc.stderr
    got = checks(proc)
    assert not got["no_sleep"]["passed"] and "asyncio.sleep(0.01)" in got["no_sleep"]["reason"]
    assert not got["sync_primitive"]["passed"]
    assert (REPO / TARGET).read_bytes() == before_bytes


def test_a_weakened_assert_is_refused() -> None:
    src = (REPO / TARGET).read_text()
    after = src.replace('assert BALANCE["amount"] == 30', 'assert BALANCE["amount"] in (10, 20, 30)')
    proc = gate(diff_of(TARGET, after))
    assert proc.returncode == 1
    assert not checks(proc)["no_weaker_assert"]["passed"]


def test_a_real_lock_passes() -> None:
    src = (REPO / TARGET).read_text()
    after = src.replace('BALANCE = {"amount": 0}\n', 'BALANCE = {"amount": 0}\nLOCK = asyncio.Lock()\n').replace(
        '    current = BALANCE["amount"]\n    access("BALANCE.amount", "read")\n'
        '    await asyncio.sleep(0.0005)  # the ledger write takes a moment\n'
        '    BALANCE["amount"] = current + amount\n    access("BALANCE.amount", "write")\n',
        '    async with LOCK:\n        current = BALANCE["amount"]\n        access("BALANCE.amount", "read")\n'
        '        await asyncio.sleep(0.0005)  # the ledger write takes a moment\n'
        '        BALANCE["amount"] = current + amount\n        access("BALANCE.amount", "write")\n')
    assert after != src
    proc = gate(diff_of(TARGET, after))
    assert proc.returncode == 0, proc.stdout
    assert all(c["passed"] for c in checks(proc).values())


def test_source_files_need_allow_src() -> None:
    diff = diff_of("bench/ring.py", (REPO / "bench/ring.py").read_text() + "\nLOCK = asyncio.Lock()\n")
    assert not checks(gate(diff))["src_allowed"]["passed"]
    assert checks(gate(diff, "--allow-src"))["src_allowed"]["passed"]


def test_bad_diffs_are_one_line_errors() -> None:
    for text in ("garbage\n", "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n x\n", "--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n"):
        proc = gate(text)
        assert proc.returncode == 2, (text, proc.stdout, proc.stderr)
        assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
