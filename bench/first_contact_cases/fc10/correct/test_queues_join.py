"""Queue / PriorityQueue / LifoQueue tests in the style of a crawler or a task
dispatcher: FIFO order from one producer, priority and LIFO order when all
items are queued first, a worker pool finished with join()/task_done(), and
backpressure of a bounded queue.
"""
import asyncio

import pytest


@pytest.mark.asyncio
async def test_single_producer_order_is_preserved():
    q = asyncio.Queue()
    received = []

    async def producer():
        for i in range(20):
            await q.put(i)
            if i % 5 == 0:
                await asyncio.sleep(0.005)
        await q.put(None)

    async def consumer():
        while (item := await q.get()) is not None:
            received.append(item)

    await asyncio.wait_for(asyncio.gather(producer(), consumer()), 10)
    assert received == list(range(20))


@pytest.mark.asyncio
async def test_priority_and_lifo_order_when_queued_up_front():
    pq = asyncio.PriorityQueue()
    for prio, url in [(3, "/c"), (1, "/a"), (2, "/b"), (1, "/a2")]:
        pq.put_nowait((prio, url))
    assert [(await pq.get())[1] for _ in range(4)] == ["/a", "/a2", "/b", "/c"]

    lq = asyncio.LifoQueue()
    for x in "xyz":
        await lq.put(x)
    assert [await lq.get() for _ in range(3)] == ["z", "y", "x"]


@pytest.mark.asyncio
async def test_worker_pool_join_waits_for_task_done():
    q = asyncio.Queue()
    results = {}

    async def worker(wid):
        while True:
            url = await q.get()
            try:
                await asyncio.sleep(0.002)
                results[url] = wid
            finally:
                q.task_done()

    for i in range(30):
        q.put_nowait(f"/page/{i}")
    workers = [asyncio.create_task(worker(w)) for w in range(3)]
    await asyncio.wait_for(q.join(), 10)
    assert set(results) == {f"/page/{i}" for i in range(30)}
    assert q.empty()
    for w in workers:
        w.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    assert all(w.cancelled() for w in workers)


@pytest.mark.asyncio
async def test_bounded_queue_blocks_producer_until_consumer_catches_up():
    q = asyncio.Queue(maxsize=2)
    put_done = []

    async def producer():
        for i in range(3):
            await q.put(i)
            put_done.append(i)

    prod = asyncio.create_task(producer())
    async with asyncio.timeout(10):
        while len(put_done) < 2:
            await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert put_done == [0, 1] and q.full() and not prod.done()
    assert await q.get() == 0
    await asyncio.wait_for(prod, 10)
    assert [q.get_nowait(), q.get_nowait()] == [1, 2]


@pytest.mark.asyncio
async def test_nowait_variants_raise_on_empty_and_full():
    q = asyncio.Queue(maxsize=1)
    with pytest.raises(asyncio.QueueEmpty):
        q.get_nowait()
    q.put_nowait("only")
    with pytest.raises(asyncio.QueueFull):
        q.put_nowait("extra")
    assert q.qsize() == 1
    q.get_nowait()
    q.task_done()
    with pytest.raises(ValueError):
        q.task_done()
    await asyncio.wait_for(q.join(), 10)
