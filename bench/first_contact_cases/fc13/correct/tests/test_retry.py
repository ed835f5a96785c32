"""Retry / backoff tests (tenacity / backoff style) with seeded jitter and a pluggable sleep."""

import asyncio
import time

import pytest

from pacer import Backoff, DeadlineExceeded, RetryError, deadline_scope, retry, retrying, stats

EPS = 0.010


class Flaky:
    def __init__(self, failures, exc=ConnectionError):
        self.failures = failures
        self.exc = exc
        self.calls = 0
        self.started = []

    async def __call__(self):
        self.calls += 1
        self.started.append(asyncio.get_running_loop().time())
        if self.calls <= self.failures:
            raise self.exc(f"failure {self.calls}")
        return "ok"


@pytest.mark.asyncio
async def test_success_after_failures_records_delays(sleep_recorder):
    fn = Flaky(2)
    result = await retry(fn, attempts=5, backoff=Backoff(base=0.1, factor=2), sleep=sleep_recorder)
    assert result == "ok"
    assert fn.calls == 3
    assert sleep_recorder.delays == pytest.approx([0.1, 0.2])
    assert stats.get("retry.failures") == 2
    assert stats.get("retry.successes") == 1


@pytest.mark.asyncio
async def test_gives_up_with_retry_error(sleep_recorder):
    fn = Flaky(10)
    with pytest.raises(RetryError) as info:
        await retry(fn, attempts=3, backoff=Backoff(base=1, factor=3), sleep=sleep_recorder)
    assert info.value.attempts == 3
    assert isinstance(info.value.last, ConnectionError)
    assert sleep_recorder.delays == [1, 3]


@pytest.mark.asyncio
async def test_non_retryable_error_propagates_at_once(sleep_recorder):
    fn = Flaky(1, exc=ValueError)
    with pytest.raises(ValueError):
        await retry(fn, attempts=5, retry_on=(ConnectionError,), sleep=sleep_recorder)
    assert fn.calls == 1
    assert sleep_recorder.delays == []


def test_seeded_full_jitter_is_reproducible():
    a = Backoff(base=0.5, factor=2, jitter="full", seed=7).schedule(6)
    b = Backoff(base=0.5, factor=2, jitter="full", seed=7).schedule(6)
    c = Backoff(base=0.5, factor=2, jitter="full", seed=8).schedule(6)
    assert a == b
    assert a != c
    raw = Backoff(base=0.5, factor=2).schedule(6)
    assert all(0 <= d <= r for d, r in zip(a, raw))


def test_equal_jitter_and_cap():
    policy = Backoff(base=1, factor=10, max_delay=50, jitter="equal", seed=3)
    for i, d in enumerate(policy.schedule(5)):
        r = min(50, 10 ** i)
        assert r / 2 <= d <= r
    with pytest.raises(ValueError):
        Backoff(jitter="sometimes")


@pytest.mark.asyncio
async def test_real_sleep_elapsed_is_at_least_the_backoff_sum():
    fn = Flaky(3)
    start = time.monotonic()
    await retry(fn, attempts=4, backoff=Backoff(base=0.02, factor=2))
    elapsed = time.monotonic() - start
    assert elapsed >= 0.02 + 0.04 + 0.08 - EPS
    assert elapsed < 5.0


@pytest.mark.asyncio
async def test_attempts_are_separated_by_their_delays():
    fn = Flaky(3)
    policy = Backoff(base=0.01, factor=2, jitter="full", seed=42)
    expected = Backoff(base=0.01, factor=2, jitter="full", seed=42).schedule(3)
    await retry(fn, attempts=4, backoff=policy)
    gaps = [b - a for a, b in zip(fn.started, fn.started[1:])]
    for gap, delay in zip(gaps, expected):
        assert gap >= delay - EPS


@pytest.mark.asyncio
async def test_cancel_during_backoff_is_not_retried():
    fn = Flaky(100)
    failed_once = asyncio.Event()
    task = asyncio.create_task(
        retry(fn, attempts=5, backoff=Backoff(base=30), on_retry=lambda *a: failed_once.set())
    )
    await asyncio.wait_for(failed_once.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert fn.calls == 1


@pytest.mark.asyncio
async def test_decorator(sleep_recorder):
    calls = []

    @retrying(attempts=3, backoff=Backoff(base=0.25), sleep=sleep_recorder)
    async def fetch(x):
        calls.append(x)
        if len(calls) < 2:
            raise ConnectionError
        return x * 2

    assert await fetch(21) == 42
    assert calls == [21, 21]
    assert sleep_recorder.delays == [0.25]


@pytest.mark.asyncio
async def test_backoff_longer_than_deadline_fails_fast():
    fn = Flaky(5)
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded):
        async with deadline_scope(10):
            await retry(fn, attempts=5, backoff=Backoff(base=60))
    assert fn.calls == 1
    assert time.monotonic() - start < 5.0
