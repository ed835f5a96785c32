"""A periodic background job runs concurrently with itself after an overrun.

Report: https://github.com/tina4stack/tina4-python/issues/94 ("background() runs a slow sync task
concurrently with itself"). Paraphrase: the tick loop ran a sync task in a thread pool under
``wait_for(run_in_executor(...), interval)``. A run that overran the interval was "timed out", but
a thread cannot be cancelled: the wrapper future was abandoned while the thread kept working, and
the loop started the next tick alongside it (peak concurrency 2 for one task). The fix awaits each
run to completion and only warns on an overrun.

Model: the pre-fix tick loop with a 0.5 s interval, a 2-worker executor, and a sync job that
normally takes 0.05 s; two ticks 0.05 s apart.
"""

import asyncio
import concurrent.futures
import threading
import time

import pytest

JOB_TIME = 0.05
TICK_TIMEOUT = 0.5
GAP = 0.05


class Job:
    def __init__(self):
        self.lock = threading.Lock()
        self.active = 0
        self.peak = 0
        self.runs = 0

    def __call__(self):
        with self.lock:
            self.active += 1
            self.runs += 1
            self.peak = max(self.peak, self.active)
        try:
            time.sleep(JOB_TIME)  # e.g. a sync database sweep
        finally:
            with self.lock:
                self.active -= 1


async def tick_loop(job, executor, ticks, warnings):
    loop = asyncio.get_running_loop()
    for n in range(ticks):
        try:
            await asyncio.wait_for(loop.run_in_executor(executor, job), TICK_TIMEOUT)
        except asyncio.TimeoutError:
            warnings.append(f"tick {n} was interrupted")
        await asyncio.sleep(GAP)


@pytest.mark.asyncio
async def test_a_job_never_overlaps_itself():
    job = Job()
    warnings = []
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    try:
        await asyncio.wait_for(tick_loop(job, executor, 2, warnings), 10)
    finally:
        executor.shutdown(wait=True)
    assert job.runs == 2
    assert job.peak == 1, f"job ran {job.peak}x concurrently ({warnings})"
