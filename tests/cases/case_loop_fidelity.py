"""Inputs of tests/test_loop_fidelity.py: programs that look at the loop the way real libraries do.

The handle tests check what call_soon/call_later/call_at return as an in-memory TTL cache does
(it keeps the timer of each key, checks it is an asyncio handle, reads its deadline and cancels
it). The rate limiter is a leaky bucket that re-arms one wake-up timer from the elapsed loop
time, so it only makes progress if loop.time() advances between two steps.
Each test passes under plain pytest on the stock loop.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any, Deque, Dict, Optional

import pytest


# ---- handles, as a TTL cache keeps them ----


class TtlCache:
    """A dict whose keys expire: each key with a TTL owns a call_later timer that deletes it."""

    def __init__(self) -> None:
        self.values: Dict[str, Any] = {}
        self.timers: Dict[str, asyncio.TimerHandle] = {}

    def set(self, key: str, value: Any, ttl: Optional[float] = None) -> None:
        old = self.timers.pop(key, None)
        if old is not None:
            old.cancel()
        self.values[key] = value
        if ttl is not None:
            self.timers[key] = asyncio.get_running_loop().call_later(ttl, self._expire, key)

    def _expire(self, key: str) -> None:
        self.values.pop(key, None)
        self.timers.pop(key, None)

    def ttl_left(self, key: str) -> float:
        return asyncio.TimerHandle.when(self.timers[key]) - asyncio.get_running_loop().time()


@pytest.mark.asyncio
async def test_call_later_returns_an_asyncio_timer_handle() -> None:
    cache = TtlCache()
    cache.set("k", 1, ttl=10)
    handle = cache.timers["k"]
    assert isinstance(handle, asyncio.Handle)
    assert isinstance(handle, asyncio.TimerHandle)
    assert asyncio.TimerHandle in type(handle).__mro__
    assert 9.0 < cache.ttl_left("k") <= 10.0
    assert handle.when() == asyncio.TimerHandle.when(handle)
    assert handle._scheduled is True
    assert repr(handle).startswith("<TimerHandle when=")
    cache.set("k", 2, ttl=20)
    assert handle.cancelled() and handle._callback is None and handle._args is None
    assert repr(handle).startswith("<TimerHandle cancelled when=")
    assert cache.values == {"k": 2} and not cache.timers["k"].cancelled()


@pytest.mark.asyncio
async def test_call_soon_returns_an_asyncio_handle() -> None:
    loop = asyncio.get_running_loop()
    ran = []
    handle = loop.call_soon(ran.append, 1)
    threadsafe = loop.call_soon_threadsafe(ran.append, 2)
    for h in (handle, threadsafe):
        assert isinstance(h, asyncio.Handle) and not isinstance(h, asyncio.TimerHandle)
        assert asyncio.Handle in type(h).__mro__ and asyncio.TimerHandle not in type(h).__mro__
        assert h._args in ((1,), (2,)) and h._loop is loop and not h.cancelled()
        assert repr(h).startswith("<Handle ")
    asyncio.Handle.cancel(threadsafe)  # asyncio's own method on the handle
    assert threadsafe.cancelled()
    await asyncio.sleep(0)
    assert ran == [1]


@pytest.mark.asyncio
async def test_timer_handles_order_and_compare_like_asyncio() -> None:
    loop = asyncio.get_running_loop()
    now = loop.time()
    late = loop.call_at(now + 2, print)
    early = loop.call_at(now + 1, print)
    same = loop.call_at(now + 2, print)
    assert sorted([late, early]) == [early, late]
    assert early < late and late > early and early <= late and late >= early
    assert late == same and hash(late) == hash(now + 2)
    assert (early == object()) is False and early != late
    for h in (late, early, same):
        h.cancel()
        assert h.cancelled()


@pytest.mark.asyncio
async def test_the_loop_and_policy_are_asyncio_types() -> None:
    loop = asyncio.get_running_loop()
    assert isinstance(loop, asyncio.AbstractEventLoop)
    assert isinstance(loop, asyncio.BaseEventLoop)
    assert isinstance(loop, asyncio.SelectorEventLoop)
    assert isinstance(asyncio.get_event_loop_policy(), asyncio.DefaultEventLoopPolicy)


# ---- a rate limiter that re-arms on elapsed loop time ----


class DripLimiter:
    """A leaky bucket: each acquire pours one unit in, `rate` units drain away per second of loop
    time, and an acquire that would overflow the bucket waits. One timer, re-armed each time it
    fires, wakes the oldest waiter once enough has drained; how long it waits is computed from
    the level the elapsed time left, so the limiter only moves on if time passes between steps."""

    def __init__(self, capacity: float, period: float) -> None:
        self.capacity = capacity
        self.rate = capacity / period
        self.level = 0.0
        self.checked = 0.0
        self.waiting: Deque["asyncio.Future[None]"] = collections.deque()
        self.timer: Optional[asyncio.TimerHandle] = None

    def _drain(self) -> None:
        now = asyncio.get_running_loop().time()
        if self.level:
            self.level = max(self.level - (now - self.checked) * self.rate, 0.0)
        self.checked = now

    def _room_for_one(self) -> bool:
        self._drain()
        return self.level + 1 <= self.capacity

    def _wake(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        while self.waiting and self.waiting[0].done():
            self.waiting.popleft()
        if not self.waiting:
            return
        self._drain()
        excess = 1 - self.capacity + self.level
        if excess <= 0:
            self.waiting.popleft().set_result(None)
            return
        loop = asyncio.get_running_loop()
        self.timer = loop.call_at(self.checked + excess / self.rate, self._wake)

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._room_for_one():
            fut = loop.create_future()
            fut.add_done_callback(lambda _: loop.call_soon(self._wake))
            self.waiting.append(fut)
            self._wake()
            await fut
        self.level += 1


@pytest.mark.asyncio
async def test_rate_limiter_lets_ten_through_in_about_a_second() -> None:
    limiter = DripLimiter(5, 1)
    loop = asyncio.get_running_loop()
    start = loop.time()
    done = []

    async def worker(i: int) -> None:
        await limiter.acquire()
        done.append(i)

    await asyncio.gather(*(worker(i) for i in range(10)))
    assert sorted(done) == list(range(10))
    assert 0.9 <= loop.time() - start < 2.0


# ---- the clock a sleep(0) loop sees ----


@pytest.mark.asyncio
async def test_time_advances_across_sleep_zero() -> None:
    """A busy-wait on the loop clock ends: every step takes some time on a real machine."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    last = start
    spins = 0
    while loop.time() - start < 0.001:
        await asyncio.sleep(0)
        now = loop.time()
        assert now > last, "loop.time() must advance between two steps"
        last = now
        spins += 1
    assert spins >= 1
