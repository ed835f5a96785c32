"""Lock / Semaphore / BoundedSemaphore tests in the style of a connection pool
(aiopg / aiomysql pool, an HTTP connector limit): mutual exclusion across an
await, FIFO hand-over of a Lock to waiters queued in a known order, a
concurrency cap, over-release detection, and a cancelled waiter that must not
eat a permit.
"""
import asyncio

import pytest


class Account:
    def __init__(self):
        self.balance = 0
        self.lock = asyncio.Lock()

    async def deposit(self, amount):
        async with self.lock:
            current = self.balance
            await asyncio.sleep(0)           # a "query" between read and write
            self.balance = current + amount


@pytest.mark.asyncio
async def test_lock_protects_read_modify_write():
    acct = Account()
    await asyncio.gather(*(acct.deposit(1) for _ in range(50)))
    assert acct.balance == 50
    assert not acct.lock.locked()


@pytest.mark.asyncio
async def test_lock_is_handed_to_waiters_in_the_order_they_queued():
    lock = asyncio.Lock()
    order = []
    await lock.acquire()

    async def waiter(name, queued):
        queued.set()                 # set right before blocking in acquire()
        async with lock:
            order.append(name)

    tasks = []
    for name in ("first", "second", "third"):
        queued = asyncio.Event()
        tasks.append(asyncio.create_task(waiter(name, queued)))
        await asyncio.wait_for(queued.wait(), 10)   # now queued in acquire()
    lock.release()
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert order == ["first", "second", "third"]


@pytest.mark.asyncio
async def test_semaphore_caps_concurrent_connections():
    sem = asyncio.Semaphore(2)
    inside = 0
    peak = 0
    gate = asyncio.Event()
    done = []

    async def use_connection(i):
        nonlocal inside, peak
        async with sem:
            inside += 1
            peak = max(peak, inside)
            await gate.wait()
            inside -= 1
        done.append(i)

    tasks = [asyncio.create_task(use_connection(i)) for i in range(6)]
    async with asyncio.timeout(10):
        while inside < 2:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert inside == 2 and sem.locked()
    gate.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert peak == 2
    assert sorted(done) == list(range(6))
    assert not sem.locked()


@pytest.mark.asyncio
async def test_bounded_semaphore_rejects_extra_release():
    sem = asyncio.BoundedSemaphore(1)
    async with sem:
        assert sem.locked()
    with pytest.raises(ValueError):
        sem.release()
    plain = asyncio.Semaphore(1)
    plain.release()                    # an unbounded one just grows
    await plain.acquire()
    await plain.acquire()
    assert plain.locked()


@pytest.mark.asyncio
async def test_cancelled_waiter_does_not_consume_a_permit():
    sem = asyncio.Semaphore(1)
    await sem.acquire()
    queued_a, queued_b = asyncio.Event(), asyncio.Event()
    got = []

    async def waiter(name, queued):
        queued.set()
        async with sem:
            got.append(name)

    a = asyncio.create_task(waiter("a", queued_a))
    await asyncio.wait_for(queued_a.wait(), 10)
    b = asyncio.create_task(waiter("b", queued_b))
    await asyncio.wait_for(queued_b.wait(), 10)
    a.cancel()
    with pytest.raises(asyncio.CancelledError):
        await a
    sem.release()
    await asyncio.wait_for(b, 10)
    assert got == ["b"]
    assert not sem.locked()
