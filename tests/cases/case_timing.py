"""Timing thresholds that are not races, and one race that hides behind a timeout guard.

Every test here but the last is race-free: it fails only when one step takes longer than a
duration the test itself armed (a cache entry's TTL, a wait's timeout), which a slow machine can
do and an order of events cannot. The last one is a real lost update whose test merely wraps the
work in asyncio.wait_for.
"""

import asyncio
import functools
import sys
from typing import Any, Awaitable, Callable, Dict, List

import pytest


def ttl_cached(ttl: float) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Caches a coroutine function's results per argument; an entry is dropped ttl seconds after it
    was stored, by a timer, the way async-lru's ttl works."""

    def wrap(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        entries: Dict[Any, Any] = {}

        @functools.wraps(fn)
        async def cached(key: Any) -> Any:
            if key in entries:
                return entries[key]
            value = await fn(key)
            entries[key] = value
            asyncio.get_running_loop().call_later(ttl, entries.pop, key, None)
            return value

        return cached

    return wrap


FETCHES: List[int] = []


@ttl_cached(ttl=0.1)
async def fetch(key: int) -> int:
    FETCHES.append(key)
    await asyncio.sleep(0.001)  # the backend answers after a millisecond
    return key * 2


@pytest.mark.asyncio
async def test_ttl_cache_hit() -> None:
    FETCHES.clear()
    assert await fetch(7) == 14
    await asyncio.sleep(0.005)  # well within the 0.1 s TTL
    assert await fetch(7) == 14
    assert FETCHES == [7], "the second call should have been a cache hit"


class Counter:
    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.value = 0

    async def increment(self) -> None:
        async with self.lock:
            current = self.value
            await asyncio.sleep(0.001)
            self.value = current + 1


@pytest.mark.asyncio
async def test_locked_increments_within_wait_timeout() -> None:
    counter = Counter()
    tasks = [asyncio.ensure_future(counter.increment()) for _ in range(3)]
    done, pending = await asyncio.wait(tasks, timeout=0.3)
    assert not pending, "the increments should finish well within 0.3 s"
    assert counter.value == 3


async def two_steps() -> int:
    await asyncio.sleep(0.002)
    await asyncio.sleep(0.002)
    return 1


@pytest.mark.asyncio
async def test_wait_for_guard() -> None:
    assert await asyncio.wait_for(two_steps(), 0.2) == 1


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is new in Python 3.11")
@pytest.mark.asyncio
async def test_timeout_guard() -> None:
    async with asyncio.timeout(0.2):
        assert await two_steps() == 1


BALANCE = {"amount": 0}


async def deposit(amount: int, arrive: float) -> None:
    await asyncio.sleep(arrive)  # when the request arrives
    current = BALANCE["amount"]
    await asyncio.sleep(0.001)  # the ledger write takes a moment
    BALANCE["amount"] = current + amount


@pytest.mark.asyncio
async def test_guarded_lost_update() -> None:
    BALANCE["amount"] = 0
    await asyncio.wait_for(asyncio.gather(deposit(10, 0), deposit(20, 0.002)), 1.0)
    assert BALANCE["amount"] == 30


@pytest.mark.asyncio
async def test_sleep_then_assert_background_done() -> None:
    """A real order race with no deadline at all: a sleep's timer is a wake-up, not a guard."""
    done: List[int] = []

    async def background() -> None:
        await asyncio.sleep(0.001)
        done.append(1)

    task = asyncio.ensure_future(background())
    await asyncio.sleep(0.002)  # "surely long enough" for the background work
    assert done == [1], "the background task had not finished"
    await task
