"""A step is slow by what the program took, not by what a busy machine added (src/runtime/cpuwait.c).

The case computes for 30 ms of CPU in one step. The engine, its workers and one CPU-bound process
are pinned to one CPU, so that step takes two to three times 30 ms of wall time; with --slow-step 45
it is slow only if the time its thread waited for the CPU is counted as the step's. (One busy
process, not more: the suite's other tests share the machine.)
Counted so, investigate called a natural run's step "a blocking call or slow step" (a golden of
test_investigate failed that way under the rest of the suite). A step of 100 ms of CPU stays slow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import CASES, describe, engine  # noqa: E402

CASE = f"{CASES}/case_busy_step.py"
CPU = min(os.sched_getaffinity(0))


def one_cpu() -> None:
    os.sched_setaffinity(0, {CPU})


def slow_rows(name: str) -> List[Dict[str, str]]:
    """The evidence about slow steps of investigating the case's test `name` on one busy CPU."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=one_cpu)
               for _ in range(1)]
    try:
        proc = engine("investigate", f"{CASE}::{name}", "--json", "--natural", "8", "--runs", "200", "--replays", "3",
                      "--slow-step", "45", preexec_fn=one_cpu, timeout=300)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    data = json.loads(proc.stdout) if proc.stdout.strip() else {}
    assert proc.returncode == 1 and data.get("verdict") == "reproduced", describe(proc)
    return [e for e in data.get("evidence", [])
            if "slow step" in e.get("claim", "") or "ms wall" in e.get("measured", "")]


def test_a_step_the_machine_slowed_is_not_a_slow_step() -> None:
    slow = slow_rows("test_deposits_after_a_computation")  # 30 ms of CPU, several times that on the wall
    assert not slow, f"a step slowed by the machine's other work was called slow: {slow}"


def test_a_step_that_computes_past_the_limit_is_still_slow() -> None:
    slow = slow_rows("test_deposits_after_a_long_computation")  # 100 ms of CPU
    assert any("slow step" in e["claim"] for e in slow), slow
