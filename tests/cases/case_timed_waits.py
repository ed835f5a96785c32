"""Timed waits of the test's own thread on threading primitives, with the deadline computed from
time.monotonic() in the program's own code (as janus's sync queue and many libraries copy the
standard library's pattern). Plain pytest passes each in tens of milliseconds: the real clock moves
while the thread waits. Under a controlled loop whose clocks did not move by the real wait, each
loop would wait its timeout again and again (a hang under the zero schedule)."""

import asyncio
import threading
import time

import pytest


def put_with_timeout(cond: threading.Condition, full: list, timeout: float) -> bool:
    """queue.Queue.put's timed wait, written out: False when the room never came."""
    endtime = time.monotonic() + timeout
    with cond:
        while full:
            remaining = endtime - time.monotonic()
            if remaining <= 0.0:
                return False
            cond.wait(remaining)
    return True


@pytest.mark.asyncio
async def test_a_timed_condition_wait_runs_out() -> None:
    assert put_with_timeout(threading.Condition(), [1], 0.02) is False
    await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_an_event_polled_until_a_deadline() -> None:
    ev = threading.Event()
    deadline = time.monotonic() + 0.02
    polls = 0
    while time.monotonic() < deadline:
        ev.wait(0.005)
        polls += 1
    assert 1 <= polls <= 10
    await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_a_thread_joined_in_slices_until_a_deadline() -> None:
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    deadline = time.monotonic() + 0.03
    while time.monotonic() < deadline:
        t.join(0.01)
    assert t.is_alive()
    stop.set()
    t.join()
    await asyncio.sleep(0)
