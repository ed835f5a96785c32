"""TTL store tests: wall-clock timestamps in records, expiry, sweeping, single-flight loads."""

import asyncio
import time
from datetime import datetime, timedelta, timezone

import pytest
import pytest_asyncio

from pacer import TTLStore, stats


class FakeNow:
    def __init__(self, t=1_700_000_000.0):
        self.t = t

    def __call__(self):
        return self.t


def test_records_carry_utc_timestamps():
    before = datetime.now(timezone.utc)
    store = TTLStore(default_ttl=60)
    rec = store.set("k", "v")
    after = datetime.now(timezone.utc)
    assert rec.created_at.tzinfo is timezone.utc
    assert before - timedelta(seconds=1) <= rec.created_at <= after + timedelta(seconds=1)
    left = rec.expires_at - time.time()
    assert 0 < left <= 60
    assert store.get("k") == "v"


@pytest.mark.asyncio
async def test_entry_expires_after_real_time():
    store = TTLStore()
    store.set("k", 1, ttl=0.05)
    await asyncio.sleep(0.1)
    assert store.get("k") is None
    assert "k" not in store
    assert stats.get("ttl.expired") == 1


@pytest.mark.asyncio
async def test_entry_lives_within_its_ttl():
    store = TTLStore()
    store.set("k", 1, ttl=30)
    await asyncio.sleep(0.01)
    assert store.get("k") == 1


def test_expiry_boundary_is_inclusive():
    now = FakeNow()
    store = TTLStore(now=now)
    store.set("k", 1, ttl=10)
    now.t += 9.5
    assert "k" in store
    now.t += 0.5
    assert "k" not in store


def test_touch_extends_and_age_uses_datetimes():
    now = FakeNow()
    store = TTLStore(default_ttl=10, now=now)
    store.set("k", 1)
    now.t += 5
    assert store.age("k") == timedelta(seconds=5)
    assert store.touch("k", ttl=10)
    now.t += 9
    assert store.get("k") == 1
    assert not store.touch("missing")


def test_purge_counts_removed():
    now = FakeNow()
    store = TTLStore(now=now)
    for i in range(5):
        store.set(f"k{i}", i, ttl=i + 1)
    now.t += 3
    assert store.purge() == 3
    assert len(store) == 2
    assert store.swept == 3


@pytest.mark.asyncio
async def test_get_or_load_runs_the_loader_once():
    store = TTLStore()
    gate = asyncio.Event()
    loads = []

    async def loader():
        loads.append(1)
        await gate.wait()
        return "value"

    tasks = [asyncio.create_task(store.get_or_load("k", loader, ttl=30)) for _ in range(5)]
    while not loads:
        await asyncio.sleep(0)
    gate.set()
    assert await asyncio.wait_for(asyncio.gather(*tasks), 5) == ["value"] * 5
    assert loads == [1]
    assert store.get("k") == "value"


@pytest.mark.asyncio
async def test_loader_error_reaches_every_waiter_and_is_not_cached():
    store = TTLStore()
    gate = asyncio.Event()

    async def loader():
        await gate.wait()
        raise LookupError("down")

    tasks = [asyncio.create_task(store.get_or_load("k", loader)) for _ in range(3)]
    await asyncio.sleep(0)
    gate.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 5)
    assert all(isinstance(r, LookupError) for r in results)
    assert "k" not in store


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def swept_store():
    store = TTLStore()
    store.start_sweeper(0.01)
    yield {"store": store, "loop": asyncio.get_running_loop()}
    await store.stop_sweeper()


@pytest.mark.asyncio(loop_scope="module")
class TestSweeper:
    async def test_sweeper_runs_on_the_module_loop(self, swept_store):
        assert asyncio.get_running_loop() is swept_store["loop"]

    async def test_short_lived_entry_is_swept(self, swept_store):
        store = swept_store["store"]
        store.set("sweep-me", 1, ttl=0.02)

        async def gone():
            while "sweep-me" in store._data:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(gone(), 5)
        assert store.swept >= 1

    async def test_long_lived_entry_survives_sweeps(self, swept_store):
        store = swept_store["store"]
        store.set("keep-me", 1, ttl=60)
        swept_before = store.swept
        await asyncio.sleep(0.05)
        assert store.get("keep-me") == 1
        assert store.swept >= swept_before
