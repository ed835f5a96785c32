"""Thread <-> asyncio bridges: queue bridge, to_thread/run_in_executor, call_soon_threadsafe,
threading.Event polling and a loop thread."""

import asyncio
import concurrent.futures
import threading
import time

import pytest

from pacer import BridgeClosed, LoopThread, QueueBridge, ThreadNotifier, run_blocking, wait_thread_event

EPS = 0.010


@pytest.mark.asyncio
async def test_items_arrive_in_order_after_the_producer_slept(bridge):
    def produce(b):
        for i in range(5):
            if i:
                time.sleep(0.01)
            b.put(i)

    start = time.monotonic()
    bridge.start_producer(produce)
    got = [item async for item in bridge]
    assert got == [0, 1, 2, 3, 4]
    assert time.monotonic() - start >= 4 * 0.01 - EPS


@pytest.mark.asyncio
async def test_producer_error_reaches_the_consumer(bridge):
    def produce(b):
        b.put("first")
        raise ValueError("sensor unplugged")

    bridge.start_producer(produce)
    assert await asyncio.wait_for(bridge.get(), 5) == "first"
    with pytest.raises(ValueError, match="sensor unplugged"):
        await asyncio.wait_for(bridge.get(), 5)


@pytest.mark.asyncio
async def test_backpressure_blocks_the_producer():
    b = QueueBridge.for_running_loop(maxsize=2)

    def produce(br):
        for i in range(5):
            br.put(i, timeout=10)

    b.start_producer(produce)
    try:
        async def two_in_flight():
            while b.put_count < 2:
                await asyncio.sleep(0.005)

        await asyncio.wait_for(two_in_flight(), 5)
        await asyncio.sleep(0.05)
        assert b.put_count == 2  # the third put waits for the consumer
        got = [item async for item in b]
        assert got == [0, 1, 2, 3, 4]
    finally:
        b.join(5)


@pytest.mark.asyncio
async def test_put_after_close_is_refused(bridge):
    bridge.close()
    with pytest.raises(BridgeClosed):
        bridge.put(1)
    with pytest.raises(BridgeClosed):
        await asyncio.wait_for(bridge.get(), 5)


@pytest.mark.asyncio
async def test_to_thread_blocking_sleeps_lower_bound():
    start = time.monotonic()
    await asyncio.gather(*(asyncio.to_thread(time.sleep, 0.05) for _ in range(3)))
    elapsed = time.monotonic() - start
    assert elapsed >= 0.05 - EPS
    assert elapsed < 5.0


@pytest.mark.asyncio
async def test_run_blocking_on_a_private_executor():
    def work(x, delay):
        time.sleep(delay)
        return x * x, threading.current_thread().name

    executor = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="pacer-exec")
    try:
        start = time.perf_counter()
        results = await asyncio.gather(*(run_blocking(work, i, 0.02, executor=executor) for i in range(4)))
        assert time.perf_counter() - start >= 0.02 - EPS
    finally:
        executor.shutdown(wait=True)
    assert [r[0] for r in results] == [0, 1, 4, 9]
    assert all(r[1].startswith("pacer-exec") for r in results)


@pytest.mark.asyncio
async def test_worker_thread_completes_a_loop_future():
    notifier = ThreadNotifier()
    fut = notifier.future()

    def worker():
        time.sleep(0.03)
        notifier.notify(fut, 42)

    start = time.monotonic()
    t = threading.Thread(target=worker, name="pacer-worker")
    t.start()
    try:
        assert await asyncio.wait_for(fut, 5) == 42
    finally:
        t.join(5)
    assert time.monotonic() - start >= 0.03 - EPS
    assert notifier.delivered == 1


@pytest.mark.asyncio
async def test_late_notification_after_a_timeout_is_ignored():
    notifier = ThreadNotifier()
    fut = notifier.future()
    release = threading.Event()

    def worker():
        release.wait(5)
        notifier.notify(fut, "late")

    t = threading.Thread(target=worker, name="pacer-worker")
    t.start()
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(fut, 0.02)
        release.set()

        async def counted():
            while notifier.late == 0:
                await asyncio.sleep(0.005)

        await asyncio.wait_for(counted(), 5)
    finally:
        release.set()
        t.join(5)
    assert fut.cancelled()
    assert notifier.delivered == 0


@pytest.mark.asyncio
async def test_worker_thread_reports_an_error():
    notifier = ThreadNotifier()
    fut = notifier.future()
    t = threading.Thread(target=notifier.notify_error, args=(fut, OSError("disk")), name="pacer-worker")
    t.start()
    try:
        with pytest.raises(OSError, match="disk"):
            await asyncio.wait_for(fut, 5)
    finally:
        t.join(5)


@pytest.mark.asyncio
async def test_polling_a_threading_event_set_by_a_thread():
    ev = threading.Event()

    def setter():
        time.sleep(0.05)
        ev.set()

    start = time.monotonic()
    t = threading.Thread(target=setter, name="pacer-setter")
    t.start()
    try:
        assert await wait_thread_event(ev, timeout=10, poll=0.005)
    finally:
        t.join(5)
    assert time.monotonic() - start >= 0.05 - EPS


@pytest.mark.asyncio
async def test_polling_a_threading_event_times_out():
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    assert not await wait_thread_event(threading.Event(), timeout=0.05)
    assert loop.time() - t0 >= 0.05 - EPS


def test_loop_thread_runs_callbacks_and_stops():
    lt = LoopThread().start()
    seen = threading.Event()
    names = []

    def cb():
        names.append(threading.current_thread().name)
        seen.set()

    try:
        lt.call_soon(cb)
        assert seen.wait(5)
        fut = lt.submit(asyncio.sleep(0, result="done"))
        assert fut.result(5) == "done"
    finally:
        lt.stop()
    assert names == [lt.name]
    assert not lt.alive
    with pytest.raises(BridgeClosed):
        lt.call_soon(cb)
