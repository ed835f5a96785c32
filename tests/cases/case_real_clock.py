"""Input for tests/test_cannot_lie.py: tests that read the real clock across a sleep.

On stock asyncio, loop.time() is time.monotonic(): a sleep of 0.05 s lets at least 0.05 s pass on
every clock the process can read. Plain pytest passes every test here, every time; none has a bug
a schedule could expose.
"""

import asyncio
import time
from time import monotonic

import pytest

PAUSE = 0.05


@pytest.mark.asyncio
async def test_monotonic_advances_across_sleep() -> None:
    t0 = time.monotonic()
    await asyncio.sleep(PAUSE)
    assert time.monotonic() - t0 >= PAUSE


@pytest.mark.asyncio
async def test_perf_counter_advances_across_sleep() -> None:
    t0 = time.perf_counter()
    await asyncio.sleep(PAUSE)
    assert time.perf_counter() - t0 >= PAUSE


@pytest.mark.asyncio
async def test_wall_clock_advances_across_sleep() -> None:
    t0 = time.time()
    await asyncio.sleep(PAUSE)
    assert time.time() - t0 >= PAUSE


@pytest.mark.asyncio
async def test_monotonic_ns_advances_across_sleep() -> None:
    t0 = time.monotonic_ns()
    await asyncio.sleep(PAUSE)
    assert time.monotonic_ns() - t0 >= PAUSE * 1e9


@pytest.mark.asyncio
async def test_monotonic_imported_at_module_top_advances_across_sleep() -> None:
    t0 = monotonic()
    await asyncio.sleep(PAUSE)
    assert monotonic() - t0 >= PAUSE


@pytest.mark.asyncio
async def test_loop_time_and_monotonic_advance_together() -> None:
    loop = asyncio.get_running_loop()
    l0, m0 = loop.time(), time.monotonic()
    await asyncio.sleep(PAUSE)
    drift = abs((loop.time() - l0) - (time.monotonic() - m0))
    assert drift < 0.01


def test_time_sleep_between_monotonic_reads_inside_asyncio_run() -> None:
    async def main() -> float:
        m0 = time.monotonic()
        time.sleep(PAUSE)  # a blocking call: the process really waits
        return time.monotonic() - m0

    assert asyncio.run(main()) >= PAUSE


@pytest.mark.asyncio
async def test_loop_time_is_the_monotonic_reading() -> None:
    # not only its differences: a deadline computed from one clock is compared with the other
    loop = asyncio.get_running_loop()
    await asyncio.sleep(PAUSE)
    before = time.monotonic()
    now = loop.time()
    assert before <= now <= time.monotonic()
    handle = loop.call_later(1.0, lambda: None)
    assert 0.9 < handle.when() - time.monotonic() <= 1.0
    handle.cancel()


@pytest.mark.asyncio
async def test_loop_time_moves_across_a_blocking_sleep_in_one_step() -> None:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    time.sleep(PAUSE)  # blocks the loop: its clock has moved when the step reads it again
    assert loop.time() - t0 >= PAUSE


@pytest.mark.asyncio
async def test_a_deadline_on_the_monotonic_clock_awaited_with_call_at() -> None:
    loop = asyncio.get_running_loop()
    fired = loop.create_future()
    deadline = time.monotonic() + PAUSE
    loop.call_at(deadline, fired.set_result, None)
    await fired
    assert time.monotonic() >= deadline and loop.time() >= deadline
