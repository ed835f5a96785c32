"""Deadline propagation tests, modelled on gRPC-style request deadlines and on
job schedulers that compute an absolute deadline once and hand it to the loop.

Deadlines are computed from ``time.monotonic()`` (which is the clock behind the
default event loop's ``loop.time()``) and passed to ``loop.call_at`` and
``asyncio.timeout_at``; budgets are split across sub-calls and generous
``asyncio.wait_for`` timeouts wrap short work.
"""

import asyncio
import time

import pytest


class DeadlineExceeded(Exception):
    pass


class Deadline:
    """An absolute monotonic deadline that can be shared by nested calls."""

    def __init__(self, when: float) -> None:
        self.when = when

    @classmethod
    def after(cls, seconds: float) -> "Deadline":
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        return max(0.0, self.when - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.when


async def call_with_deadline(coro, deadline: Deadline):
    try:
        async with asyncio.timeout_at(deadline.when):
            return await coro
    except TimeoutError:
        raise DeadlineExceeded(f"deadline passed {time.monotonic() - deadline.when:.3f}s ago")


@pytest.mark.asyncio
async def test_call_at_fires_after_absolute_deadline():
    loop = asyncio.get_running_loop()
    deadline = time.monotonic() + 0.1
    fired = loop.create_future()
    loop.call_at(deadline, lambda: fired.set_result(time.monotonic()))
    fired_at = await asyncio.wait_for(fired, timeout=10)
    assert fired_at >= deadline - 1e-6
    assert fired_at - deadline < 5.0


@pytest.mark.asyncio
async def test_timeout_at_interrupts_slow_work_no_earlier_than_deadline():
    deadline = Deadline.after(0.1)
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        await call_with_deadline(asyncio.sleep(60), deadline)
    now = time.monotonic()
    assert now >= deadline.when - 1e-6
    assert now - start < 10.0
    assert deadline.expired()


@pytest.mark.asyncio
async def test_deadline_is_shared_by_sequential_subcalls():
    deadline = Deadline.after(1.0)  # ~100x what the two fast steps need
    completed = []

    async def step(name, duration):
        await asyncio.sleep(duration)
        completed.append(name)

    with pytest.raises(TimeoutError):
        async with asyncio.timeout_at(deadline.when):
            await step("auth", 0.005)
            await step("lookup", 0.005)
            await step("render", 60)  # exceeds the remaining budget
        # unreachable
    assert completed == ["auth", "lookup"]
    assert deadline.expired()


@pytest.mark.asyncio
@pytest.mark.parametrize("budget", [5, 30], ids=["5s", "30s"])
async def test_generous_wait_for_around_short_work(budget):
    async def short_work():
        await asyncio.sleep(0.005)
        return budget * 2

    start = time.perf_counter()
    assert await asyncio.wait_for(short_work(), timeout=budget) == budget * 2
    assert time.perf_counter() - start < budget
