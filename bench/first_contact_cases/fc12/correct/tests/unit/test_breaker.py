import asyncio
import logging

import pytest

from app.breaker import CLOSED, HALF_OPEN, OPEN, BreakerOpen, CircuitBreaker

pytestmark = pytest.mark.asyncio


async def ok():
    return "ok"


async def boom():
    raise ConnectionError("down")


async def trip(breaker, n):
    for _ in range(n):
        with pytest.raises(ConnectionError):
            await breaker.call(boom)


async def test_failures_below_threshold_keep_it_closed(fake_clock):
    b = CircuitBreaker(failure_threshold=3, clock=fake_clock)
    await trip(b, 2)
    assert await b.call(ok) == "ok"
    await trip(b, 2)
    assert b.state == CLOSED and b.failures == 2


async def test_opens_and_fails_fast(fake_clock):
    b = CircuitBreaker(failure_threshold=2, reset_timeout=5, clock=fake_clock)
    await trip(b, 2)
    called = []

    async def probe():
        called.append(1)

    with pytest.raises(BreakerOpen):
        await b.call(probe)
    assert b.state == OPEN and called == []


async def test_successful_probe_closes(fake_clock):
    b = CircuitBreaker(failure_threshold=1, reset_timeout=5, clock=fake_clock)
    await trip(b, 1)
    fake_clock.advance(5)
    assert await b.call(ok) == "ok"
    assert b.state == CLOSED
    assert b.transitions == [(CLOSED, OPEN), (OPEN, HALF_OPEN), (HALF_OPEN, CLOSED)]


async def test_failed_probe_reopens_from_now(fake_clock):
    b = CircuitBreaker(failure_threshold=1, reset_timeout=5, clock=fake_clock)
    await trip(b, 1)
    fake_clock.advance(6)
    await trip(b, 1)
    assert b.state == OPEN and b.opened_at == fake_clock.now
    fake_clock.advance(4.9)
    with pytest.raises(BreakerOpen):
        await b.call(ok)


async def test_half_open_admits_exactly_one_probe(fake_clock):
    b = CircuitBreaker(failure_threshold=1, reset_timeout=5, clock=fake_clock)
    await trip(b, 1)
    fake_clock.advance(5)
    gate, entered = asyncio.Event(), asyncio.Event()

    async def slow_probe():
        entered.set()
        await gate.wait()
        return "probe"

    probe = asyncio.create_task(b.call(slow_probe))
    await asyncio.wait_for(entered.wait(), 20)
    for _ in range(3):
        with pytest.raises(BreakerOpen):
            await b.call(ok)
    gate.set()
    assert await asyncio.wait_for(probe, 20) == "probe"
    assert await b.call(ok) == "ok"


async def test_cancelled_probe_frees_the_slot(fake_clock):
    b = CircuitBreaker(failure_threshold=1, reset_timeout=5, clock=fake_clock)
    await trip(b, 1)
    fake_clock.advance(5)
    entered = asyncio.Event()

    async def hang():
        entered.set()
        await asyncio.sleep(3600)

    probe = asyncio.create_task(b.call(hang))
    await asyncio.wait_for(entered.wait(), 20)
    probe.cancel()
    with pytest.raises(asyncio.CancelledError):
        await probe
    assert b.state == HALF_OPEN
    assert await b.call(ok) == "ok"


async def test_transitions_are_logged(fake_clock, caplog):
    b = CircuitBreaker(failure_threshold=1, clock=fake_clock, name="payments")
    await trip(b, 1)
    msgs = [r.getMessage() for r in caplog.records if r.name == "app.breaker"]
    assert msgs == ["breaker.transition name=payments new=open old=closed"]
    assert caplog.records[-1].levelno == logging.INFO


async def test_reset_timeout_on_the_loop_clock():
    b = CircuitBreaker(failure_threshold=1, reset_timeout=0.2)
    await trip(b, 1)
    with pytest.raises(BreakerOpen):
        await b.call(ok)
    await asyncio.sleep(0.25)
    assert await b.call(ok) == "ok"
    assert b.state == CLOSED
