"""Retry-with-exponential-backoff decorator tests, modelled on the retry helpers
shipped by cloud SDKs and ``tenacity``/``backoff`` style libraries.

The helper retries a coroutine on transient errors, sleeping
``base * factor**attempt`` (optionally with jitter, made deterministic through
``monkeypatch``), logs every retry, and gives up after ``max_attempts``.
Elapsed time is checked with ``time.time()`` and ``loop.time()``.
"""

import asyncio
import functools
import logging
import random
import time

import pytest

log = logging.getLogger("fc8.retry")


class TransientError(Exception):
    pass


class PermanentError(Exception):
    pass


def retry(max_attempts=4, base=0.02, factor=2.0, jitter=0.0, retry_on=(TransientError,)):
    def decorator(fn):
        @functools.wraps(fn)
        async def wrapper(*args, **kwargs):
            attempt = 0
            while True:
                try:
                    return await fn(*args, **kwargs)
                except retry_on as exc:
                    attempt += 1
                    if attempt >= max_attempts:
                        log.error("giving up on %s after %d attempts", fn.__name__, attempt)
                        raise
                    delay = base * factor ** (attempt - 1)
                    if jitter:
                        delay += random.uniform(0, jitter)
                    log.warning("retry %d for %s in %.3fs: %s", attempt, fn.__name__, delay, exc)
                    await asyncio.sleep(delay)

        return wrapper

    return decorator


class FlakyService:
    def __init__(self, failures: int, exc=TransientError) -> None:
        self.failures = failures
        self.exc = exc
        self.calls = 0

    async def fetch(self, key: str) -> str:
        self.calls += 1
        await asyncio.sleep(0)  # a network round trip
        if self.calls <= self.failures:
            raise self.exc(f"attempt {self.calls} failed")
        return f"value-for-{key}"


@pytest.mark.asyncio
async def test_succeeds_after_transient_failures_and_waits_backoff(caplog):
    svc = FlakyService(failures=3)
    fetch = retry(max_attempts=5, base=0.02, factor=2.0)(svc.fetch)
    caplog.set_level(logging.WARNING, logger="fc8.retry")
    start = time.time()
    assert await fetch("a") == "value-for-a"
    elapsed = time.time() - start
    # delays: 0.02 + 0.04 + 0.08 = 0.14 s (wall clock, allow for clock slew)
    assert elapsed >= 0.14 - 0.005
    assert elapsed < 10.0
    assert svc.calls == 4
    retries = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage().split()[1] for r in retries] == ["1", "2", "3"]


@pytest.mark.asyncio
async def test_gives_up_after_max_attempts(caplog):
    svc = FlakyService(failures=100)
    fetch = retry(max_attempts=3, base=0.01)(svc.fetch)
    loop = asyncio.get_running_loop()
    start = loop.time()
    with caplog.at_level(logging.WARNING, logger="fc8.retry"):
        with pytest.raises(TransientError, match="attempt 3 failed"):
            await fetch("b")
    elapsed = loop.time() - start
    assert svc.calls == 3
    assert elapsed >= 0.01 + 0.02 - 1e-6
    assert elapsed < 10.0
    assert "giving up on fetch after 3 attempts" in caplog.text


@pytest.mark.asyncio
async def test_permanent_errors_are_not_retried():
    svc = FlakyService(failures=1, exc=PermanentError)
    fetch = retry(max_attempts=5, base=5.0)(svc.fetch)
    start = time.monotonic()
    with pytest.raises(PermanentError):
        await fetch("c")
    # A retry would have slept 5 s; we must have failed fast.
    assert time.monotonic() - start < 4.0
    assert svc.calls == 1


@pytest.mark.asyncio
async def test_jitter_is_applied_on_top_of_backoff(monkeypatch):
    monkeypatch.setattr(random, "uniform", lambda a, b: b)  # worst-case jitter
    sleeps = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay, result=None):
        sleeps.append(delay)
        return await real_sleep(delay, result)

    monkeypatch.setattr(asyncio, "sleep", recording_sleep)
    svc = FlakyService(failures=2)
    fetch = retry(max_attempts=4, base=0.01, factor=3.0, jitter=0.005)(svc.fetch)
    assert await fetch("d") == "value-for-d"
    # FlakyService itself calls asyncio.sleep(0) on every attempt.
    backoff = [d for d in sleeps if d]
    assert backoff == pytest.approx([0.015, 0.035])


@pytest.mark.asyncio
@pytest.mark.parametrize("concurrency", [8], ids=["eight-callers"])
async def test_independent_callers_retry_independently(concurrency):
    services = [FlakyService(failures=i % 3) for i in range(concurrency)]
    calls = [retry(max_attempts=4, base=0.01)(s.fetch) for s in services]
    results = await asyncio.wait_for(
        asyncio.gather(*(c(f"k{i}") for i, c in enumerate(calls))), timeout=30
    )
    assert results == [f"value-for-k{i}" for i in range(concurrency)]
    assert [s.calls for s in services] == [i % 3 + 1 for i in range(concurrency)]
