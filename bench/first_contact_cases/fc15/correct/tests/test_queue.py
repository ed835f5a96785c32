"""BridgeQueue: a janus-style queue between threads and the event loop."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from bridge import BridgeClosed, BridgeQueue, QueueEmpty, QueueFull
from conftest import EPS, LONG, wait_until


@pytest.mark.asyncio
async def test_thread_producer_async_consumer_in_order():
    q: BridgeQueue[int] = BridgeQueue()

    def produce():
        for i in range(200):
            q.put(i)
        q.close()

    t = threading.Thread(target=produce, name="bridge-producer")
    t.start()
    got = [item async for item in q]
    await asyncio.to_thread(t.join)
    assert got == list(range(200))


@pytest.mark.asyncio
async def test_async_producer_thread_consumer_in_order():
    q: BridgeQueue[str] = BridgeQueue(maxsize=8)
    got = []

    def consume():
        while True:
            try:
                got.append(q.get(timeout=LONG))
            except BridgeClosed:
                return

    t = threading.Thread(target=consume, name="bridge-consumer")
    t.start()
    for i in range(100):
        await q.aput(f"m{i}")
    q.close()
    await asyncio.to_thread(t.join)
    assert got == [f"m{i}" for i in range(100)]


@pytest.mark.asyncio
async def test_aput_waits_while_full_until_a_thread_takes_one():
    q: BridgeQueue[int] = BridgeQueue(maxsize=2)
    await q.aput(1)
    await q.aput(2)
    putter = asyncio.create_task(q.aput(3))
    # Nothing consumes yet, so the put cannot complete, however slow we are.
    done, _ = await asyncio.wait({putter}, timeout=0.05)
    assert not done
    assert await asyncio.to_thread(q.get, LONG) == 1
    await asyncio.wait_for(putter, LONG)
    assert q.qsize() == 2


def test_thread_get_timeout_raises_queue_empty():
    q: BridgeQueue[int] = BridgeQueue(loop=asyncio.new_event_loop())
    try:
        t0 = time.monotonic()
        with pytest.raises(QueueEmpty):
            q.get(timeout=0.05)
        assert time.monotonic() - t0 >= 0.05 - EPS
    finally:
        q._loop.close()


@pytest.mark.asyncio
async def test_put_nowait_on_full_queue_raises():
    q: BridgeQueue[int] = BridgeQueue(maxsize=1)
    q.put_nowait(1)
    with pytest.raises(QueueFull):
        q.put_nowait(2)
    with pytest.raises(QueueFull):
        await asyncio.to_thread(q.put, 2, 0.02)


@pytest.mark.asyncio
async def test_close_keeps_queued_items_then_raises():
    q: BridgeQueue[int] = BridgeQueue()
    for i in range(3):
        q.put_nowait(i)
    q.close()
    with pytest.raises(BridgeClosed):
        q.put_nowait(99)
    assert [await q.aget() for _ in range(3)] == [0, 1, 2]
    with pytest.raises(BridgeClosed):
        await q.aget()


@pytest.mark.asyncio
async def test_close_from_thread_wakes_waiting_async_getter():
    q: BridgeQueue[int] = BridgeQueue()
    getter = asyncio.create_task(q.aget())
    await wait_until(lambda: len(q._getters) == 1)
    await asyncio.to_thread(q.close)
    with pytest.raises(BridgeClosed):
        await asyncio.wait_for(getter, LONG)


@pytest.mark.asyncio
async def test_close_from_loop_wakes_blocked_thread_getter():
    q: BridgeQueue[int] = BridgeQueue()
    outcome = []
    entered = threading.Event()

    def consume():
        entered.set()
        try:
            q.get(timeout=LONG)
        except BridgeClosed:
            outcome.append("closed")

    t = threading.Thread(target=consume, name="bridge-consumer")
    t.start()
    await asyncio.to_thread(entered.wait, LONG)
    q.close()
    await asyncio.to_thread(t.join, LONG)
    assert outcome == ["closed"]


@pytest.mark.asyncio
async def test_ajoin_waits_for_thread_task_done():
    q: BridgeQueue[int] = BridgeQueue()
    processed = []

    def worker():
        while True:
            try:
                item = q.get(timeout=LONG)
            except BridgeClosed:
                return
            time.sleep(0.001)
            processed.append(item)
            q.task_done()

    t = threading.Thread(target=worker, name="bridge-worker-q")
    t.start()
    for i in range(30):
        await q.aput(i)
        if i % 7 == 0:
            await asyncio.sleep(0.002)
    await asyncio.wait_for(q.ajoin(), LONG)
    # join returned, so every put item was marked done
    assert q.unfinished_tasks == 0
    assert sorted(processed) == list(range(30))
    q.close()
    await asyncio.to_thread(t.join, LONG)


@pytest.mark.asyncio
async def test_cancelled_getter_does_not_swallow_an_item():
    q: BridgeQueue[str] = BridgeQueue()
    g1 = asyncio.create_task(q.aget())
    g2 = asyncio.create_task(q.aget())
    await wait_until(lambda: len(q._getters) == 2)
    g1.cancel()
    await asyncio.to_thread(q.put, "only")
    assert await asyncio.wait_for(g2, LONG) == "only"
    with pytest.raises(asyncio.CancelledError):
        await g1


@pytest.mark.asyncio
async def test_many_producer_threads_keep_per_producer_order():
    q: BridgeQueue[tuple] = BridgeQueue(maxsize=16)

    def produce(pid):
        for seq in range(100):
            q.put((pid, seq), timeout=LONG)

    threads = [threading.Thread(target=produce, args=(p,), name=f"bridge-p{p}")
               for p in range(4)]
    for t in threads:
        t.start()
    got = [await asyncio.wait_for(q.aget(), LONG) for _ in range(400)]
    for t in threads:
        await asyncio.to_thread(t.join, LONG)
    for pid in range(4):
        # no global order between threads, but each producer's own order holds
        assert [s for p, s in got if p == pid] == list(range(100))
