"""Shared fixtures of the pacer suite.

Timing conventions: lower bounds use ``EPS`` (10 ms) for clock resolution; upper bounds are
at least 20x the expected time; readiness is always established with events.
"""

from __future__ import annotations

import logging
import random
import threading
import time

import pytest
import pytest_asyncio

import pacer
from pacer import stats
from pacer.clock import ManualClock

EPS = 0.010
SLOW = 5.0  # generous upper bound for anything expected to take < 0.25 s


class Stopwatch:
    """Reads time.monotonic() and time.perf_counter() together."""

    def __init__(self) -> None:
        self.start()

    def start(self) -> "Stopwatch":
        self._mono = time.monotonic()
        self._perf = time.perf_counter()
        return self

    def elapsed(self) -> float:
        return min(time.monotonic() - self._mono, time.perf_counter() - self._perf)

    def at_least(self, seconds: float) -> bool:
        return self.elapsed() >= seconds - EPS


@pytest.fixture(autouse=True)
def _reset_stats():
    stats.reset()
    yield
    stats.reset()


@pytest.fixture(autouse=True)
def _pacer_logging(caplog):
    caplog.set_level(logging.DEBUG, logger="pacer")


@pytest.fixture(autouse=True)
def _no_leaked_pacer_threads():
    before = {t.ident for t in threading.enumerate()}
    yield
    deadline = time.monotonic() + SLOW
    while True:
        leaked = [t for t in threading.enumerate()
                  if t.name.startswith("pacer-") and t.ident not in before and t.is_alive()]
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert not leaked, f"threads left running: {[t.name for t in leaked]}"


@pytest.fixture
def eps() -> float:
    return EPS


@pytest.fixture
def stopwatch() -> Stopwatch:
    return Stopwatch()


@pytest.fixture
def manual_clock() -> ManualClock:
    return ManualClock(start=1000.0)


@pytest.fixture
def rng() -> random.Random:
    return random.Random(1234)


class SleepRecorder:
    """A pluggable ``sleep`` that records requested delays and only yields once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        import asyncio

        self.delays.append(delay)
        await asyncio.sleep(0)


@pytest.fixture
def sleep_recorder() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def facade():
    f = pacer.SyncFacade(cancel_grace=SLOW).start()
    try:
        yield f
    finally:
        f.close()


@pytest_asyncio.fixture
async def bridge():
    b = pacer.QueueBridge.for_running_loop()
    try:
        yield b
    finally:
        b.close()
        b.join(SLOW)


@pytest.fixture
def anyio_backend():
    return "asyncio"
