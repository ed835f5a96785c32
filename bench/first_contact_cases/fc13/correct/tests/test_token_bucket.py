"""Token bucket tests (aiolimiter / pyrate-limiter style)."""

import asyncio
import time

import pytest

from pacer import RateLimitExceeded, TokenBucket

EPS = 0.010


def test_burst_up_to_capacity_then_refusal(manual_clock):
    bucket = TokenBucket(rate=2, capacity=5, clock=manual_clock)
    for _ in range(5):
        bucket.try_acquire()
    with pytest.raises(RateLimitExceeded) as info:
        bucket.try_acquire()
    assert info.value.retry_after == pytest.approx(0.5)
    assert bucket.admitted == 5


def test_refill_follows_clock(manual_clock):
    bucket = TokenBucket(rate=10, capacity=2, clock=manual_clock)
    bucket.try_acquire(2)
    with pytest.raises(RateLimitExceeded):
        bucket.try_acquire()
    manual_clock.advance(0.1)
    bucket.try_acquire()
    assert bucket.tokens == pytest.approx(0.0)


def test_invalid_arguments():
    with pytest.raises(ValueError):
        TokenBucket(rate=0)
    with pytest.raises(ValueError):
        TokenBucket(rate=1, capacity=-1)
    with pytest.raises(ValueError):
        TokenBucket(rate=1, capacity=1).try_acquire(2)


@pytest.mark.asyncio
async def test_sequential_acquisitions_take_at_least_the_refill_time():
    bucket = TokenBucket(rate=50, capacity=1)
    start = time.monotonic()
    for _ in range(6):
        await bucket.acquire()
    elapsed = time.monotonic() - start
    # 5 refills at 50/s
    assert elapsed >= 5 / 50 - EPS
    assert elapsed < 5.0


@pytest.mark.asyncio
async def test_lower_bound_with_perf_counter_and_burst():
    bucket = TokenBucket(rate=40, capacity=2)
    start = time.perf_counter()
    for _ in range(6):
        await bucket.acquire()
    assert time.perf_counter() - start >= 4 / 40 - EPS


@pytest.mark.asyncio
async def test_concurrent_admissions_never_beat_the_rate():
    loop = asyncio.get_running_loop()
    rate, capacity = 100, 2
    bucket = TokenBucket(rate=rate, capacity=capacity)
    t0 = loop.time()
    admitted = []

    async def worker():
        await bucket.acquire()
        admitted.append(loop.time())

    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(8))), 10)
    admitted.sort()
    for i, t in enumerate(admitted):
        needed = max(0, i - capacity + 1)  # tokens that had to be refilled first
        assert t - t0 >= needed / rate - EPS, (i, t - t0)


@pytest.mark.asyncio
async def test_waiters_are_served_in_arrival_order():
    bucket = TokenBucket(rate=200, capacity=1)
    order = []

    async def worker(i):
        await bucket.acquire()
        order.append(i)

    tasks = [asyncio.create_task(worker(i)) for i in range(5)]
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert order == [0, 1, 2, 3, 4]


@pytest.mark.asyncio
async def test_cancelled_waiter_takes_no_token(manual_clock):
    bucket = TokenBucket(rate=10, capacity=1, clock=manual_clock)
    bucket.try_acquire()
    waiter = asyncio.create_task(bucket.acquire())
    while manual_clock.sleeping == 0:
        await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    manual_clock.advance(0.1)
    bucket.try_acquire()  # the refilled token is still there
    assert bucket.admitted == 2


@pytest.mark.asyncio
async def test_try_acquire_does_not_jump_the_queue(manual_clock):
    bucket = TokenBucket(rate=10, capacity=1, clock=manual_clock)
    bucket.try_acquire()
    waiter = asyncio.create_task(bucket.acquire())
    while manual_clock.sleeping == 0:
        await asyncio.sleep(0)
    manual_clock.advance(0.1)  # token refilled, but the waiter has not resumed yet
    with pytest.raises(RateLimitExceeded):
        bucket.try_acquire()
    await asyncio.wait_for(waiter, 5)
    assert bucket.admitted == 2

