"""Deadline propagation through nested calls (asyncio.timeout, timeout_at, wait_for)."""

import asyncio
import time

import pytest

from pacer import DeadlineExceeded, current_deadline, deadline_scope, remaining, with_deadline

EPS = 0.010
pytestmark = pytest.mark.asyncio


async def test_asyncio_timeout_lower_bound_on_two_clocks():
    loop = asyncio.get_running_loop()
    t_loop, t_mono = loop.time(), time.monotonic()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await asyncio.sleep(10)
    assert loop.time() - t_loop >= 0.05 - EPS
    assert time.monotonic() - t_mono >= 0.05 - EPS
    assert loop.time() - t_loop < 5.0


async def test_timeout_at_absolute_deadline():
    loop = asyncio.get_running_loop()
    when = loop.time() + 0.04
    with pytest.raises(TimeoutError):
        async with asyncio.timeout_at(when):
            await asyncio.Event().wait()
    assert loop.time() >= when - EPS


async def test_wait_for_lower_bound_with_perf_counter():
    start = time.perf_counter()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(asyncio.sleep(10), 0.05)
    assert time.perf_counter() - start >= 0.05 - EPS


async def test_scope_raises_deadline_exceeded():
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded) as info:
        async with deadline_scope(0.05, name="lookup"):
            await asyncio.sleep(10)
    assert isinstance(info.value, TimeoutError)
    assert "lookup" in str(info.value)
    assert time.monotonic() - start >= 0.05 - EPS


async def test_inner_scope_cannot_extend_the_outer_deadline():
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        async with deadline_scope(0.05) as outer:
            async with deadline_scope(10) as inner:
                assert inner is outer
                await asyncio.sleep(10)
    assert time.monotonic() - start >= 0.05 - EPS


async def test_inner_scope_narrows_and_outer_continues():
    async with deadline_scope(30) as outer:
        with pytest.raises(DeadlineExceeded):
            async with deadline_scope(0.03) as inner:
                assert inner.when < outer.when
                await asyncio.sleep(10)
        assert current_deadline() is outer
        assert outer.remaining() > 0
    assert current_deadline() is None


async def test_remaining_decreases_with_real_time():
    assert remaining() is None
    assert remaining(default=7.0) == 7.0
    async with deadline_scope(30):
        r1 = remaining()
        await asyncio.sleep(0.02)
        r2 = remaining()
    assert r1 - r2 >= 0.02 - EPS


async def test_deadline_reaches_the_innermost_call():
    calls = []

    async def db_query():
        calls.append(("db", remaining()))
        await asyncio.sleep(10)

    async def repository():
        return await with_deadline(db_query())

    async def service():
        async with deadline_scope(0.05):
            return await repository()

    start = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        await service()
    elapsed = time.monotonic() - start
    assert elapsed >= 0.05 - EPS
    assert elapsed < 5.0
    assert calls[0][0] == "db" and calls[0][1] <= 0.05


async def test_with_deadline_returns_the_value():
    async def quick():
        await asyncio.sleep(0)
        return 42

    async with deadline_scope(30):
        assert await with_deadline(quick()) == 42
    assert await with_deadline(quick(), budget=30) == 42
    assert await with_deadline(quick()) == 42


async def test_expired_budget_rejects_without_running():
    ran = []

    async def never():
        ran.append(True)

    with pytest.raises(DeadlineExceeded):
        await with_deadline(never(), budget=0)
    assert ran == []

