"""Synchronisation primitive tests, modelled on a connection pool, an account
ledger and a "ready" barrier in a service framework.

Shows the correct use of ``asyncio.Lock`` around read-modify-write that spans an
``await``, ``Semaphore``/``BoundedSemaphore`` bounding concurrency, ``Event``
used as a one-shot broadcast, and ``Condition.wait_for`` with a predicate.
"""

import asyncio

import pytest


class Ledger:
    def __init__(self) -> None:
        self.balances: dict[str, int] = {"alice": 100, "bob": 100}
        self._lock = asyncio.Lock()

    async def _audit(self) -> None:
        await asyncio.sleep(0)  # e.g. write-ahead log append

    async def transfer(self, src: str, dst: str, amount: int) -> bool:
        async with self._lock:
            if self.balances[src] < amount:
                return False
            self.balances[src] -= amount
            await self._audit()
            self.balances[dst] += amount
            return True


@pytest.mark.asyncio
async def test_locked_transfers_conserve_money_and_never_overdraw():
    ledger = Ledger()
    outcomes = await asyncio.gather(
        *(ledger.transfer("alice", "bob", 30) for _ in range(5)),
        *(ledger.transfer("bob", "alice", 7) for _ in range(5)),
    )
    assert sum(ledger.balances.values()) == 200
    assert min(ledger.balances.values()) >= 0
    assert outcomes.count(True) >= 8  # alice can afford 3 of 30 + refunds


class Pool:
    def __init__(self, size: int) -> None:
        self._sem = asyncio.BoundedSemaphore(size)
        self.in_use = 0
        self.peak = 0

    async def query(self, sql: str, delay: float) -> str:
        async with self._sem:
            self.in_use += 1
            self.peak = max(self.peak, self.in_use)
            try:
                await asyncio.sleep(delay)
                return sql.lower()
            finally:
                self.in_use -= 1


class PoolConfig:
    def __init__(self, size: int, label: str) -> None:
        self.size = size
        self.label = label


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "config",
    [PoolConfig(1, "serial"), PoolConfig(4, "small-pool")],
    ids=lambda c: f"{c.label}-{c.size}",
)
async def test_semaphore_bounds_concurrent_queries(config):
    size = config.size
    pool = Pool(size)
    results = await asyncio.wait_for(
        asyncio.gather(*(pool.query(f"SELECT {i}", 0.002 * (i % 4)) for i in range(20))),
        timeout=30,
    )
    assert results == [f"select {i}" for i in range(20)]
    assert pool.peak == size  # 20 > size requests, all start at once
    assert pool.in_use == 0


@pytest.mark.asyncio
async def test_event_broadcast_wakes_every_waiter():
    ready = asyncio.Event()
    woke: list[int] = []

    async def waiter(i):
        await ready.wait()
        woke.append(i)

    tasks = [asyncio.create_task(waiter(i)) for i in range(10)]
    await asyncio.sleep(0.01)
    assert woke == []
    ready.set()
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)
    assert sorted(woke) == list(range(10))
    # A waiter arriving after set() returns immediately.
    await asyncio.wait_for(ready.wait(), timeout=1)


@pytest.mark.asyncio
async def test_condition_wait_for_predicate():
    cond = asyncio.Condition()
    inventory: list[str] = []
    served: list[tuple[str, list[str]]] = []

    async def buyer(name, n):
        async with cond:
            await cond.wait_for(lambda: len(inventory) >= n)
            taken = [inventory.pop(0) for _ in range(n)]
            served.append((name, taken))

    async def restock():
        for i in range(6):
            await asyncio.sleep(0.001)
            async with cond:
                inventory.append(f"widget-{i}")
                cond.notify_all()

    async with asyncio.timeout(30):
        await asyncio.gather(buyer("a", 2), buyer("b", 3), restock())
    assert sorted(name for name, _ in served) == ["a", "b"]
    taken = sorted(w for _, ws in served for w in ws)
    assert len(taken) == 5 and len(set(taken)) == 5
    assert len(inventory) == 1


@pytest.mark.asyncio
async def test_lock_is_released_when_holder_is_cancelled():
    lock = asyncio.Lock()
    holding = asyncio.Event()

    async def holder():
        async with lock:
            holding.set()
            await asyncio.sleep(60)

    t = asyncio.create_task(holder())
    await asyncio.wait_for(holding.wait(), timeout=10)
    assert lock.locked()
    t.cancel()
    with pytest.raises(asyncio.CancelledError):
        await t
    assert not lock.locked()
    await asyncio.wait_for(lock.acquire(), timeout=1)
    lock.release()
