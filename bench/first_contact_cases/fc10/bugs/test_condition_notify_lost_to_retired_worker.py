"""Model of https://github.com/python/cpython/issues/112202 ("Race between
asyncio Condition.notify() and Task.cancel() may result in lost wakeups", fixed
in 3.13 by https://github.com/python/cpython/pull/112201). Python 3.11's
Condition.wait() re-raises CancelledError even when the waiter had already been
chosen by notify(), and nobody else is woken.

A job pool: idle workers wait on a Condition; ``submit()`` appends a job and
calls ``notify(1)``; an autoscaler retires the longest-idle worker by cancelling
it. Natural timing: the job is submitted at 0.2 s, the first idle worker takes
it, and the scaler retires an idle worker at 0.7 s. Bad interleaving: the submit
and the retire run in the same loop iteration (e.g. the loop is busy from
0.05 s to 0.8 s): notify(1) picks worker A, the scaler still sees A as idle and
cancels it before it runs, A leaves with the notification, worker B sleeps on,
and the job is never processed.
"""
import asyncio

import pytest

SUBMIT_AT = 0.2
RETIRE_AT = 0.7


class JobPool:
    def __init__(self):
        self.cond = asyncio.Condition()
        self.jobs = []
        self.idle_since = {}
        self.workers = {}
        self.processed = []
        self.job_done = asyncio.Event()

    async def worker(self, wid):
        loop = asyncio.get_running_loop()
        while True:
            async with self.cond:
                self.idle_since[wid] = loop.time()
                try:
                    await self.cond.wait_for(lambda: self.jobs)
                finally:
                    self.idle_since.pop(wid, None)
                job = self.jobs.pop(0)
            await asyncio.sleep(0.01)
            self.processed.append((wid, job))
            self.job_done.set()

    def start(self, n):
        for wid in range(n):
            self.workers[wid] = asyncio.create_task(self.worker(wid))

    async def submit(self, job):
        async with self.cond:
            self.jobs.append(job)
            self.cond.notify(1)

    def retire_longest_idle(self):
        if not self.idle_since:
            return None
        wid = min(self.idle_since, key=self.idle_since.get)
        self.workers.pop(wid).cancel()
        return wid


async def producer(pool):
    await asyncio.sleep(SUBMIT_AT)
    await pool.submit("resize-image-17")


async def autoscaler(pool):
    await asyncio.sleep(RETIRE_AT)
    pool.retire_longest_idle()


@pytest.mark.asyncio
async def test_submitted_job_is_processed_despite_scale_down():
    pool = JobPool()
    pool.start(2)
    helpers = [asyncio.create_task(producer(pool)),
               asyncio.create_task(autoscaler(pool))]
    try:
        await asyncio.gather(*helpers)
        try:
            await asyncio.wait_for(pool.job_done.wait(), 2)
        except asyncio.TimeoutError:
            pytest.fail(f"job lost: jobs still queued {pool.jobs}, "
                        f"live workers {sorted(pool.workers)}")
        assert [job for _, job in pool.processed] == ["resize-image-17"]
    finally:
        tasks = list(pool.workers.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, *helpers, return_exceptions=True)
