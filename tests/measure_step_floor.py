"""Measures the smallest real step time of the stock asyncio loop on this machine.

Not a test (pytest does not collect it: no test_ prefix). Prints one JSON line with the minimum,
the 1st percentile and the median, in nanoseconds, of the time between the starts of two
consecutive handles of one loop iteration (plain call_soon callbacks that only read the clock)
and between two consecutive task steps (tasks that only `await asyncio.sleep(0)`). The controlled
loop's floor cost per step (AFD_STEP_FLOOR_NS in src/runtime/loop.c) is chosen at or below the
minimum of both, so that the zero schedule is a machine faster than this one, never a slower one.

Usage: python tests/measure_step_floor.py [rounds]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import List


def callback_gaps(rounds: int, batch: int = 1000) -> List[int]:
    gaps: List[int] = []
    loop = asyncio.new_event_loop()
    try:
        for _ in range(rounds):
            stamps: List[int] = []
            for _ in range(batch):
                loop.call_soon(lambda: stamps.append(time.perf_counter_ns()))
            loop.call_soon(loop.stop)
            loop.run_forever()
            gaps += [b - a for a, b in zip(stamps, stamps[1:])]
    finally:
        loop.close()
    return gaps


async def _spinner(stamps: List[int], n: int) -> None:
    for _ in range(n):
        stamps.append(time.perf_counter_ns())
        await asyncio.sleep(0)


def task_step_gaps(rounds: int, tasks: int = 10, steps: int = 100) -> List[int]:
    gaps: List[int] = []
    for _ in range(rounds):
        stamps: List[int] = []

        async def main() -> None:
            await asyncio.gather(*(_spinner(stamps, steps) for _ in range(tasks)))

        asyncio.run(main())
        gaps += [b - a for a, b in zip(stamps, stamps[1:]) if b > a]
    return gaps


def summary(gaps: List[int]) -> dict:
    ordered = sorted(gaps)
    return {"n": len(ordered), "min_ns": ordered[0], "p1_ns": ordered[len(ordered) // 100],
            "median_ns": int(statistics.median(ordered))}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    print(json.dumps({"python": sys.version.split()[0], "callback": summary(callback_gaps(rounds)),
                      "task_step": summary(task_step_gaps(rounds))}))


if __name__ == "__main__":
    main()
