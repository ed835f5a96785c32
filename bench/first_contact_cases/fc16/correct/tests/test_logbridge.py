import asyncio
import logging
import threading

import pytest

from relay import AsyncQueueHandler, LogPump


@pytest.mark.asyncio
async def test_records_from_many_threads_arrive_in_per_thread_order():
    with LogPump("fc16.many") as pump:
        def worker(w):
            for i in range(25):
                pump.logger.info("w%d %d", w, i)

        threads = [threading.Thread(target=worker, args=(w,), name=f"relay-log{w}") for w in range(4)]
        for t in threads:
            t.start()
        msgs = await pump.collect(100)
        for t in threads:
            await asyncio.to_thread(t.join)
    for w in range(4):
        seq = [int(m.split()[1]) for m in msgs if m.startswith(f"w{w} ")]
        assert seq == list(range(25))
    assert pump.handler.forwarded == 100 and pump.handler.dropped == 0


@pytest.mark.asyncio
async def test_loop_thread_emit_is_enqueued_immediately():
    with LogPump("fc16.direct") as pump:
        pump.logger.warning("now")
        assert pump.queue.qsize() == 1
    assert pump.drain_nowait() == ["now"]


@pytest.mark.asyncio
async def test_message_is_rendered_at_emit_time():
    with LogPump("fc16.render") as pump:
        items = [1]
        t = threading.Thread(target=pump.logger.info, args=("items=%s", items), name="relay-log")
        t.start()
        await asyncio.to_thread(t.join)
        items.append(2)
        assert await pump.collect(1) == ["items=[1]"]


@pytest.mark.asyncio
async def test_full_queue_drops_and_counts():
    with LogPump("fc16.full", maxsize=5) as pump:
        t = threading.Thread(target=lambda: [pump.logger.info("m%d", i) for i in range(10)],
                             name="relay-log")
        t.start()
        await asyncio.to_thread(t.join)
        for _ in range(3):
            await asyncio.sleep(0)
        h = pump.handler
        assert h.forwarded + h.dropped == 10
        assert h.forwarded == 5 and h.dropped == 5
        assert pump.drain_nowait() == [f"m{i}" for i in range(5)]


def test_emit_after_loop_closed_does_not_raise():
    async def make():
        return AsyncQueueHandler(asyncio.Queue())

    handler = asyncio.run(make())  # asyncio.run closes the loop
    logger = logging.getLogger("fc16.closed")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        logger.error("nobody listens")
    finally:
        logger.removeHandler(handler)
    assert handler.dropped == 1 and handler.forwarded == 0


@pytest.mark.asyncio
async def test_handler_level_filters():
    with LogPump("fc16.level", level=logging.WARNING) as pump:
        t = threading.Thread(target=lambda: (pump.logger.debug("no"), pump.logger.error("yes")),
                             name="relay-log")
        t.start()
        await asyncio.to_thread(t.join)
        assert await pump.collect(1) == ["yes"]
        await asyncio.sleep(0)
        assert pump.drain_nowait() == []


@pytest.mark.asyncio
async def test_consumer_runs_while_producer_thread_is_active():
    with LogPump("fc16.stream") as pump:
        got_first = threading.Event()

        def producer():
            pump.logger.info("first")
            got_first.wait(20)  # only the loop-side consumer can release us
            pump.logger.info("second")

        t = threading.Thread(target=producer, name="relay-log")
        t.start()
        assert await pump.collect(1) == ["first"]
        got_first.set()
        assert await pump.collect(1) == ["second"]
        await asyncio.to_thread(t.join)
