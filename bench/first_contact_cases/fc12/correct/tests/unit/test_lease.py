import asyncio
import logging

import pytest

from app.lease import LeaseLock, LeaseLost, LeaseTimeout
from app.store import MemoryStore

pytestmark = pytest.mark.asyncio


async def test_acquire_and_release(store, fake_clock):
    lock = LeaseLock(store, "db-migrate", "node-a", ttl=10, clock=fake_clock)
    assert await lock.try_acquire()
    assert await store.get("lease:db-migrate") == {"owner": "node-a", "expires": fake_clock.now + 10}
    assert await lock.release() is True
    assert await store.get("lease:db-migrate") is None
    assert await lock.release() is False


async def test_second_owner_waits_for_release(fake_clock):
    store = MemoryStore()
    a = LeaseLock(store, "x", "a", ttl=10, clock=fake_clock)
    b = LeaseLock(store, "x", "b", ttl=10, clock=fake_clock)
    assert await a.try_acquire()
    assert not await b.try_acquire()
    await a.release()
    assert await b.try_acquire() and b.held


async def test_expired_lease_is_taken_over(fake_clock):
    store = MemoryStore()
    a = LeaseLock(store, "x", "a", ttl=10, clock=fake_clock)
    b = LeaseLock(store, "x", "b", ttl=10, clock=fake_clock)
    assert await a.try_acquire()
    fake_clock.advance(9.5)
    await a.renew()
    fake_clock.advance(9.5)
    assert not await b.try_acquire()
    fake_clock.advance(0.5)
    assert await b.try_acquire()
    with pytest.raises(LeaseLost):
        await a.renew()
    assert not a.held


async def test_acquire_timeout_is_not_early():
    store = MemoryStore()
    holder = LeaseLock(store, "x", "holder", ttl=3600)
    assert await holder.try_acquire()
    other = LeaseLock(store, "x", "other", ttl=3600, poll=0.02)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(LeaseTimeout):
        await other.acquire(timeout=0.2)
    elapsed = loop.time() - t0
    assert 0.2 - 0.01 <= elapsed < 10


async def test_context_manager_renews_and_releases():
    store = MemoryStore()
    lock = LeaseLock(store, "job", "me", ttl=30, renew_every=0.02)
    renewed = asyncio.Event()
    lock.on_renew = lambda lk: renewed.set() if lk.renewals >= 2 else None
    async with lock:
        await asyncio.wait_for(renewed.wait(), 20)
        assert (await store.get("lease:job"))["owner"] == "me"
    assert await store.get("lease:job") is None
    assert lock._renewer is None


async def test_renewal_stops_when_the_lease_is_lost(caplog):
    store = MemoryStore()
    lock = LeaseLock(store, "job", "me", ttl=30, renew_every=0.02)
    await lock.acquire()
    await store.put("lease:job", {"owner": "intruder", "expires": 1e12})
    renewer = asyncio.create_task(lock._renew_loop())
    await asyncio.wait_for(renewer, 20)
    assert not lock.held
    lost = [r for r in caplog.records if r.getMessage().startswith("lease.lost")]
    assert len(lost) == 1 and lost[0].levelno == logging.WARNING
