"""Input for tests/test_cpuwait.py: a lost update whose test body computes for 30 ms of its own
thread's CPU time (the other test: 100 ms) before the deposits start. On an idle machine that step takes about 30 ms; on a
machine busy elsewhere it takes longer, and the difference is the machine's, not the program's."""

import asyncio
import time

import pytest

BALANCE = {"amount": 0}


def compute(seconds: float) -> None:
    """Busy for `seconds` of this thread's CPU time, however long that takes on the wall clock."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


async def deposit(amount: int) -> None:
    current = BALANCE["amount"]
    await asyncio.sleep(0.0005)
    BALANCE["amount"] = current + amount


async def deposits_after(seconds: float) -> None:
    BALANCE["amount"] = 0
    compute(seconds)
    await asyncio.gather(deposit(10), deposit(20))
    assert BALANCE["amount"] == 30


@pytest.mark.asyncio
async def test_deposits_after_a_computation() -> None:
    await deposits_after(0.03)


@pytest.mark.asyncio
async def test_deposits_after_a_long_computation() -> None:
    await deposits_after(0.1)
