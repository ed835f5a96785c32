"""A job board for a small worker pool (the kind of dispatcher found in crawlers
and notification services): priority jobs, consumers that poll with a timeout,
an undo stack, and a Condition-based "N results ready" barrier.
"""
import asyncio
import itertools

import pytest

pytestmark = pytest.mark.asyncio


class JobBoard:
    def __init__(self):
        self.queue = asyncio.PriorityQueue()
        self._seq = itertools.count()

    def post(self, priority, job):
        # The sequence number breaks ties so jobs never get compared.
        self.queue.put_nowait((priority, next(self._seq), job))

    async def take(self, timeout):
        _, _, job = await asyncio.wait_for(self.queue.get(), timeout)
        return job


class ResultBin:
    def __init__(self):
        self.items = []
        self.cond = asyncio.Condition()

    async def add(self, item):
        async with self.cond:
            self.items.append(item)
            self.cond.notify_all()

    async def wait_for_count(self, n):
        async with self.cond:
            await self.cond.wait_for(lambda: len(self.items) >= n)
            return list(self.items)


async def test_priority_order_with_ties():
    board = JobBoard()
    board.post(2, {"kind": "resize"})
    board.post(0, {"kind": "urgent"})
    board.post(2, {"kind": "thumbnail"})
    board.post(1, {"kind": "email"})
    got = [(await board.take(20))["kind"] for _ in range(4)]
    assert got == ["urgent", "email", "resize", "thumbnail"]


async def test_poll_timeout_does_not_lose_later_job():
    loop = asyncio.get_running_loop()
    board = JobBoard()
    start = loop.time()
    with pytest.raises(asyncio.TimeoutError):
        await board.take(0.1)
    assert loop.time() - start >= 0.09
    board.post(5, "late job")
    assert board.queue.qsize() == 1
    assert await board.take(20) == "late job"
    assert board.queue.empty()


async def test_condition_wait_for_count():
    bin_ = ResultBin()

    async def producer():
        for i in range(5):
            await bin_.add(i)
            await asyncio.sleep(0)

    waiter = asyncio.create_task(bin_.wait_for_count(3))
    prod = asyncio.create_task(producer())
    items = await asyncio.wait_for(waiter, 20)
    assert len(items) >= 3
    assert items == sorted(items)
    await prod
    assert bin_.items == [0, 1, 2, 3, 4]


async def test_event_with_wait_for_timeout_then_set():
    loop = asyncio.get_running_loop()
    ready = asyncio.Event()
    start = loop.time()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(ready.wait(), 0.1)
    assert loop.time() - start >= 0.09
    loop.call_soon(ready.set)
    assert await asyncio.wait_for(ready.wait(), 20) is True
    ready.clear()
    assert not ready.is_set()


async def test_lifo_undo_stack_and_join():
    undo = asyncio.LifoQueue(maxsize=3)
    for action in ("type a", "type b", "bold"):
        undo.put_nowait(action)
    with pytest.raises(asyncio.QueueFull):
        undo.put_nowait("overflow")
    assert [undo.get_nowait() for _ in range(3)] == ["bold", "type b", "type a"]
    with pytest.raises(asyncio.QueueEmpty):
        undo.get_nowait()

    work = asyncio.Queue()
    done = []

    async def worker():
        while True:
            item = await work.get()
            try:
                await asyncio.sleep(0)
                done.append(item)
            finally:
                work.task_done()

    workers = [asyncio.create_task(worker()) for _ in range(3)]
    for i in range(10):
        work.put_nowait(i)
    await asyncio.wait_for(work.join(), 20)
    assert sorted(done) == list(range(10))
    for w in workers:
        w.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
