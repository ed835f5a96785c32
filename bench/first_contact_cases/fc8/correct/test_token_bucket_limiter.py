"""Token-bucket rate limiter tests, in the style of aiolimiter / an HTTP client's
outbound request throttle.

The limiter refills tokens continuously from ``loop.time()`` and makes callers
sleep until enough tokens are available.  The tests check real elapsed time with
``time.monotonic()`` / ``time.perf_counter()`` (lower bound = what the bucket
must enforce, upper bound = a very generous ceiling), and that concurrent callers
never exceed the configured burst.
"""

import asyncio
import dataclasses
import time

import pytest


class TokenBucket:
    """Async token bucket: ``rate`` tokens per second, ``capacity`` burst."""

    def __init__(self, rate: float, capacity: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self._tokens = capacity
        self._last = None
        self._lock = asyncio.Lock()

    def _refill(self, now: float) -> None:
        if self._last is None:
            self._last = now
            return
        self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
        self._last = now

    async def acquire(self, amount: float = 1.0) -> None:
        if amount > self.capacity:
            raise ValueError("cannot acquire more than the bucket capacity")
        loop = asyncio.get_running_loop()
        # The lock makes the check-and-take atomic and gives FIFO fairness.
        async with self._lock:
            while True:
                self._refill(loop.time())
                if self._tokens >= amount:
                    self._tokens -= amount
                    return
                missing = amount - self._tokens
                await asyncio.sleep(missing / self.rate)

    def tokens_now(self) -> float:
        self._refill(asyncio.get_running_loop().time())
        return self._tokens


@pytest.mark.asyncio
async def test_burst_is_served_without_waiting():
    bucket = TokenBucket(rate=5, capacity=10)
    loop = asyncio.get_running_loop()
    start = time.perf_counter()
    t0 = loop.time()
    for _ in range(10):
        await bucket.acquire()
    elapsed = time.perf_counter() - start
    # Ten tokens are available up front; this must not have slept for a refill
    # (a refill of one token takes 0.2 s).  The bound is generous for slow CI.
    assert elapsed < 5.0
    # Whatever is left can only come from the refill since we started.
    left = bucket.tokens_now()
    assert left <= 5 * (loop.time() - t0) + 1e-6


@pytest.mark.asyncio
async def test_throttles_after_burst_is_exhausted():
    bucket = TokenBucket(rate=20, capacity=2)
    start = time.monotonic()
    for _ in range(6):
        await bucket.acquire()
    elapsed = time.monotonic() - start
    # 2 free tokens, then 4 more at 20/s => at least 0.2 s.
    assert elapsed >= 0.2 - 1e-6
    assert elapsed < 10.0


@dataclasses.dataclass(frozen=True)
class RateSpec:
    rate: float
    count: int

    def __str__(self) -> str:
        return f"{self.count}@{self.rate:g}hz"


@pytest.mark.asyncio
@pytest.mark.parametrize("spec", [RateSpec(50, 5), RateSpec(100, 10)], ids=str)
async def test_measured_rate_never_exceeds_configured_rate(spec):
    rate, count = spec.rate, spec.count
    bucket = TokenBucket(rate=rate, capacity=1)
    loop = asyncio.get_running_loop()
    stamps = []
    start = loop.time()
    for _ in range(count + 1):
        await bucket.acquire()
        stamps.append(loop.time())
    span = stamps[-1] - start
    # After the first (free) token, `count` more tokens need count/rate seconds.
    assert span >= count / rate - 1e-6
    assert span < max(20 * count / rate, 5.0)
    assert stamps == sorted(stamps)


@pytest.mark.asyncio
async def test_concurrent_callers_share_the_bucket_fairly():
    bucket = TokenBucket(rate=25, capacity=1)
    loop = asyncio.get_running_loop()
    grants: list[tuple[int, float]] = []

    async def client(i: int) -> None:
        await bucket.acquire()
        grants.append((i, loop.time()))

    start = loop.time()
    await asyncio.wait_for(asyncio.gather(*(client(i) for i in range(5))), timeout=30)
    # Everybody got exactly one grant.
    assert sorted(i for i, _ in grants) == [0, 1, 2, 3, 4]
    # asyncio.Lock is FIFO and the clients queued in creation order.
    assert [i for i, _ in grants] == [0, 1, 2, 3, 4]
    # The k-th grant needs k refilled tokens at 25/s counted from the start.
    for k, (_, stamp) in enumerate(grants):
        assert stamp - start >= k * 0.04 - 1e-6
    assert grants[-1][1] - start < 10.0
