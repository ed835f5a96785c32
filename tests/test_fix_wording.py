"""Only a verified fix is proposed: the terminal text says what became of any other candidate."""

from __future__ import annotations

import re

from helpers import engine

NODE = ("bench/realbugs/t_queue_double_init/test_t_queue_double_init.py::"
        "test_concurrent_enqueue_initialises_once[buggy]")


def fix_line(out: str) -> str:
    lines = [line for line in out.splitlines() if line.startswith("  fix:")]
    assert len(lines) == 1, out
    return lines[0]


def test_a_candidate_the_gate_refuses_is_not_called_proposed() -> None:
    # The fix (RECHECK, the smallest candidate, then LOCK) belongs in the library module, which is
    # not a test file: without --allow-src the gate's src_allowed check refuses it, and nothing is
    # verified.
    proc = engine("investigate", NODE, "--fix", timeout=300)
    out = proc.stdout
    assert proc.returncode == 1, proc.stderr
    line = fix_line(out)
    assert re.match(r"  fix: +RECHECK candidate refused by the policy gate: not verified, not proposed", line), line
    assert "--allow-src" in line and "proposed;" not in line and "--apply writes it" not in line, line
    assert re.search(r"^ +FAIL src_allowed ", out, re.M), out
