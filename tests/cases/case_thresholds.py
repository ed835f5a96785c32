"""Input for tests/test_cannot_lie.py: race-free tests with a time threshold.

Each passes under plain pytest every time. A machine that stalls one step for longer than the
threshold (a 0.5 s wait_for around 10 ms of work; a 0.01 s sleep racing a 0.3 s one; a task of a few
steps against a 0.5 s sleep, however the stall is spread over its steps) can make it fail, which is a
slow machine, not a race: `timing_sensitive`, never a plain failure.
"""

import asyncio
import time

import pytest


async def slow() -> str:
    await asyncio.sleep(0.01)
    return "done"


@pytest.mark.asyncio
async def test_wait_for_well_within_its_timeout() -> None:
    assert await asyncio.wait_for(slow(), timeout=0.5) == "done"


@pytest.mark.asyncio
async def test_the_short_sleep_wins_the_race() -> None:
    short = asyncio.ensure_future(asyncio.sleep(0.01, result="short"))
    long = asyncio.ensure_future(asyncio.sleep(0.3, result="long"))
    done, pending = await asyncio.wait({short, long}, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    assert done == {short}, "the 0.3 s sleep finished as soon as the 0.01 s one"


@pytest.mark.asyncio
async def test_a_few_steps_finish_within_a_long_sleep() -> None:
    done = []

    async def worker() -> None:
        for _ in range(5):
            await asyncio.sleep(0)
        done.append(1)

    task = asyncio.create_task(worker())
    await asyncio.sleep(0.5)
    assert done, "five steps of a task had not run in 0.5 s"
    await task


@pytest.mark.asyncio
async def test_answered_within_its_budget_on_the_monotonic_clock() -> None:
    # no timer guards the budget: only the clock read at the end sees it (a stall near the
    # watchdog's 60 s carries it past 2 s, which is a slow machine)
    watchdog = asyncio.get_running_loop().call_later(60, lambda: None)
    t0 = time.monotonic()
    for _ in range(3):
        await asyncio.sleep(0)
    watchdog.cancel()
    assert time.monotonic() - t0 < 2.0


@pytest.mark.asyncio
async def test_an_entry_read_while_it_is_fresh() -> None:
    loop = asyncio.get_running_loop()
    stored = loop.time()
    keeper = asyncio.ensure_future(asyncio.sleep(30))  # something long-lived the test keeps alive
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    age = loop.time() - stored
    keeper.cancel()
    assert age < 1.0


@pytest.mark.asyncio
async def test_a_periodic_job_waits_its_interval() -> None:
    # the job's next run is a minute away; a step stalled to just short of it leaves the test's own
    # 50 ms too little room: a slow machine (the job's wake-up never fires without the stall)
    runs = []

    async def every_minute() -> None:
        while True:
            runs.append(asyncio.get_running_loop().time())
            await asyncio.sleep(60)

    job = asyncio.ensure_future(every_minute())
    await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    job.cancel()
    assert len(runs) == 1
