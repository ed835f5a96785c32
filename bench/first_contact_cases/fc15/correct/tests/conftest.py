"""Shared fixtures for the bridge test-suite."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Dict, List

import pytest
import pytest_asyncio

from bridge import Driver, LoopThread, WorkerPool
from bridge.cpu import Envelope, make_records

#: Upper bound for "this must finish eventually" waits.  Never a latency claim.
LONG = 20.0
#: Tolerance for lower bounds measured on time.monotonic().
EPS = 0.005


def _bridge_threads() -> set:
    return {t for t in threading.enumerate() if t.name.startswith("bridge-")}


@pytest.fixture(autouse=True)
def no_leaked_bridge_threads():
    """Fail a test that leaves one of *its* bridge-* threads running."""
    before = _bridge_threads()
    yield
    deadline = time.monotonic() + 5
    while True:
        leaked = {t for t in _bridge_threads() - before if t.is_alive()}
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert not leaked, f"threads left running: {sorted(t.name for t in leaked)}"


@pytest_asyncio.fixture
async def loop_errors():
    """Collect anything the running loop reports to its exception handler."""
    loop = asyncio.get_running_loop()
    errors: List[Dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, ctx: errors.append(ctx))
    yield errors
    # let already-scheduled callbacks run before judging
    await asyncio.sleep(0.01)
    loop.set_exception_handler(previous)
    assert errors == [], errors


@pytest_asyncio.fixture
async def driver():
    d = Driver(name="bridge-driver-test")
    await d.start()
    try:
        yield d
    finally:
        await d.close()


@pytest_asyncio.fixture
async def pool():
    p = WorkerPool(max_workers=3, name="bridge-pool-test")
    try:
        yield p
    finally:
        await p.aclose()


@pytest.fixture
def loop_thread():
    lt = LoopThread(name="bridge-loop-test").start()
    try:
        yield lt
    finally:
        lt.stop()


@pytest.fixture(scope="session")
def records():
    """3,000 deterministic records, about 300 KB as JSON lines."""
    return make_records(3000, seed=42)


@pytest.fixture(scope="session")
def envelope(records):
    return Envelope.seal(records)


@pytest.fixture
def anyio_backend():
    return "asyncio"


class ManualClock:
    """A clock the test advances by hand (for rate limiting tests)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


@pytest.fixture
def clock():
    return ManualClock()


async def wait_until(predicate, timeout: float = LONG, step: float = 0.005) -> None:
    """Poll *predicate* on the loop until it is true (bounded by *timeout*)."""
    async def poll():
        while not predicate():
            await asyncio.sleep(step)
    await asyncio.wait_for(poll(), timeout)
