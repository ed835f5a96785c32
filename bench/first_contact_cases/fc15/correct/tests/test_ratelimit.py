"""TokenBucket shared by threads and tasks."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from bridge import TokenBucket
from conftest import LONG


def test_capacity_then_refusal(clock):
    b = TokenBucket(rate=1, capacity=3, clock=clock)
    assert [b.try_acquire() for _ in range(4)] == [True, True, True, False]


def test_refill_follows_the_clock_and_caps(clock):
    b = TokenBucket(rate=2, capacity=4, clock=clock, initial=0)
    assert not b.try_acquire()
    clock.advance(0.5)
    assert b.try_acquire()
    assert not b.try_acquire()
    clock.advance(100)
    assert b.available() == 4


def test_invalid_parameters(clock):
    for rate, capacity in [(0, 1), (1, 0), (-1, 5)]:
        with pytest.raises(ValueError):
            TokenBucket(rate, capacity)
    with pytest.raises(ValueError):  # a request larger than the capacity
        TokenBucket(1, 2, clock=clock).try_acquire(3)


def test_threads_never_overdraw(clock):
    b = TokenBucket(rate=1, capacity=50, clock=clock)  # clock frozen: no refill
    wins = []
    lock = threading.Lock()

    def hammer():
        n = sum(b.try_acquire() for _ in range(100))
        with lock:
            wins.append(n)

    threads = [threading.Thread(target=hammer, name=f"bridge-tb{i}") for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(LONG)
    assert sum(wins) == 50 == b.granted


@pytest.mark.asyncio
async def test_async_acquire_waits_for_refill():
    b = TokenBucket(rate=20, capacity=1, initial=0)
    t0 = time.monotonic()
    await asyncio.wait_for(b.acquire(), LONG)
    # one token at 20/s needs 50 ms of refill; acquire only succeeds after it
    assert time.monotonic() - t0 >= 0.05 * 0.98


def test_acquire_blocking_times_out():
    b = TokenBucket(rate=0.1, capacity=1, initial=0)
    t0 = time.monotonic()
    assert b.acquire_blocking(timeout=0.05) is False
    assert time.monotonic() - t0 >= 0.05 - 0.005


@pytest.mark.asyncio
async def test_tasks_and_threads_share_one_budget(clock):
    b = TokenBucket(rate=1, capacity=30, clock=clock)
    thread_wins = []

    def thread_side():
        thread_wins.append(sum(b.try_acquire() for _ in range(40)))

    async def task_side():
        n = 0
        for _ in range(40):
            n += b.try_acquire()
            await asyncio.sleep(0)
        return n

    t = threading.Thread(target=thread_side, name="bridge-tb-mixed")
    t.start()
    task_wins = await asyncio.gather(task_side(), task_side())
    await asyncio.to_thread(t.join, LONG)
    assert sum(task_wins) + sum(thread_wins) == 30
