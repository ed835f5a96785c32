"""Leaky bucket (metered queue) tests."""

import asyncio
import time

import pytest

from pacer import LeakyBucket, RateLimitExceeded

EPS = 0.010


def test_rejects_bad_rate():
    with pytest.raises(ValueError):
        LeakyBucket(rate=0)


@pytest.mark.asyncio
async def test_first_is_immediate_next_is_one_interval_later(manual_clock):
    bucket = LeakyBucket(rate=10, clock=manual_clock)
    slot0 = await bucket.acquire()
    assert slot0 == manual_clock.now()
    second = asyncio.create_task(bucket.acquire())
    while manual_clock.sleeping == 0:
        await asyncio.sleep(0)
    assert not second.done()
    manual_clock.advance(0.1)
    assert await asyncio.wait_for(second, 5) == pytest.approx(slot0 + 0.1)


@pytest.mark.asyncio
async def test_sequential_lower_bound():
    bucket = LeakyBucket(rate=50)
    start = time.monotonic()
    for _ in range(6):
        await bucket.acquire()
    assert time.monotonic() - start >= 5 / 50 - EPS


@pytest.mark.asyncio
async def test_concurrent_slots_are_spaced_and_honoured():
    loop = asyncio.get_running_loop()
    bucket = LeakyBucket(rate=100)
    t0 = loop.time()
    results = []

    async def worker():
        slot = await bucket.acquire()
        results.append((slot, loop.time()))

    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(6))), 10)
    slots = sorted(s for s, _ in results)
    for a, b in zip(slots, slots[1:]):
        assert b - a >= 0.01 - 1e-9
    for slot, admitted in results:
        assert admitted >= slot
    admitted = sorted(a for _, a in results)
    for i, a in enumerate(admitted):
        assert a - t0 >= i * 0.01 - EPS


@pytest.mark.asyncio
async def test_queue_limit(manual_clock):
    bucket = LeakyBucket(rate=1, max_queue=2, clock=manual_clock)
    await bucket.acquire()
    waiters = [asyncio.create_task(bucket.acquire()) for _ in range(2)]

    async def both_waiting():
        while bucket.waiting < 2:
            await asyncio.sleep(0)

    await asyncio.wait_for(both_waiting(), 5)
    with pytest.raises(RateLimitExceeded):
        await bucket.acquire()
    manual_clock.advance(2)
    await asyncio.wait_for(asyncio.gather(*waiters), 5)
    assert bucket.admitted == 3


@pytest.mark.asyncio
async def test_cancelled_last_reservation_is_given_back(manual_clock):
    bucket = LeakyBucket(rate=10, clock=manual_clock)
    first = await bucket.acquire()
    b = asyncio.create_task(bucket.acquire())
    while manual_clock.sleeping == 0:
        await asyncio.sleep(0)
    b.cancel()
    with pytest.raises(asyncio.CancelledError):
        await b
    c = asyncio.create_task(bucket.acquire())
    while manual_clock.sleeping == 0:
        await asyncio.sleep(0)
    manual_clock.advance(0.1)
    assert await asyncio.wait_for(c, 5) == pytest.approx(first + 0.1)


@pytest.mark.asyncio
async def test_cancelled_middle_reservation_keeps_later_slots(manual_clock):
    bucket = LeakyBucket(rate=10, clock=manual_clock)
    first = await bucket.acquire()
    b = asyncio.create_task(bucket.acquire())
    c = asyncio.create_task(bucket.acquire())
    while manual_clock.sleeping < 2:
        await asyncio.sleep(0)
    b.cancel()
    with pytest.raises(asyncio.CancelledError):
        await b
    d = asyncio.create_task(bucket.acquire())
    while manual_clock.sleeping < 2:
        await asyncio.sleep(0)
    manual_clock.advance(0.31)
    slot_c, slot_d = await asyncio.wait_for(asyncio.gather(c, d), 5)
    assert slot_c == pytest.approx(first + 0.2)
    assert slot_d == pytest.approx(first + 0.3)
