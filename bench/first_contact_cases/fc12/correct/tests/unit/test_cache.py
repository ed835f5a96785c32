import asyncio

import pytest

from app import metrics
from app.cache import CachedLoader, SingleFlight, TTLCache

def test_ttl_cache_expiry(fake_clock):
    c = TTLCache(ttl=10, clock=fake_clock)
    c.set("a", 1)
    fake_clock.advance(9.99)
    assert c.get("a") == 1
    fake_clock.advance(0.01)
    assert c.get("a") is None and len(c) == 0


def test_ttl_cache_evicts_the_soonest_to_expire(fake_clock):
    c = TTLCache(ttl=10, clock=fake_clock, maxsize=2)
    c.set("old", 1)
    fake_clock.advance(1)
    c.set("new", 2)
    c.set("newest", 3)
    assert (c.get("old"), c.get("new"), c.get("newest")) == (None, 2, 3)


@pytest.mark.asyncio
async def test_concurrent_callers_share_one_execution():
    flight = SingleFlight()
    gate = asyncio.Event()
    calls = 0

    async def fetch():
        nonlocal calls
        calls += 1
        await gate.wait()
        return "value"

    tasks = [asyncio.create_task(flight.do("k", fetch)) for _ in range(5)]
    while metrics.get("singleflight.shared") < 4:
        await asyncio.sleep(0)
    gate.set()
    assert await asyncio.wait_for(asyncio.gather(*tasks), 20) == ["value"] * 5
    assert calls == 1 and not flight.in_flight("k")


@pytest.mark.asyncio
async def test_errors_reach_every_waiter_and_are_not_cached():
    flight = SingleFlight()
    gate = asyncio.Event()
    attempts = []

    async def fetch():
        attempts.append(1)
        await gate.wait()
        raise LookupError("backend down")

    tasks = [asyncio.create_task(flight.do("k", fetch)) for _ in range(3)]
    while metrics.get("singleflight.shared") < 2:
        await asyncio.sleep(0)
    gate.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 20)
    assert [type(r) for r in results] == [LookupError] * 3
    with pytest.raises(LookupError):
        await asyncio.wait_for(flight.do("k", fetch), 20)
    assert len(attempts) == 2


@pytest.mark.asyncio
async def test_cancelled_waiter_does_not_cancel_the_shared_call():
    flight = SingleFlight()
    gate = asyncio.Event()

    async def fetch():
        await gate.wait()
        return 7

    first = asyncio.create_task(flight.do("k", fetch))
    second = asyncio.create_task(flight.do("k", fetch))
    while metrics.get("singleflight.shared") < 1:
        await asyncio.sleep(0)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    gate.set()
    assert await asyncio.wait_for(second, 20) == 7


@pytest.mark.asyncio
async def test_call_is_cancelled_when_its_last_waiter_leaves():
    flight = SingleFlight()
    started, cleaned = asyncio.Event(), asyncio.Event()

    async def fetch():
        started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            cleaned.set()

    waiter = asyncio.create_task(flight.do("k", fetch))
    await asyncio.wait_for(started.wait(), 20)
    waiter.cancel()
    await asyncio.wait_for(cleaned.wait(), 20)
    with pytest.raises(asyncio.CancelledError):
        await waiter


@pytest.mark.asyncio
async def test_cached_loader_hits_then_reloads_after_ttl(fake_clock):
    loads = []

    async def load(key):
        loads.append(key)
        return key.upper()

    loader = CachedLoader(load, ttl=30, clock=fake_clock)
    assert await loader.get("a") == "A"
    assert await loader.get("a") == "A"
    fake_clock.advance(30)
    assert await loader.get("a") == "A"
    assert loads == ["a", "a"]
    assert (metrics.get("cache.hit"), metrics.get("cache.miss")) == (1, 2)
