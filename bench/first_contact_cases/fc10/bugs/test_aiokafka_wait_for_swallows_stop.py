"""Model of https://github.com/python/cpython/issues/86296 (bpo-42130,
"AsyncIO's wait_for can hide cancellation in a rare race condition", reported by
the aiokafka maintainer; related: https://github.com/python/cpython/issues/107547).

A consumer loop polls its fetch queue with ``asyncio.wait_for(queue.get(), T)``.
``stop()`` cancels the consumer task. On Python 3.11 ``wait_for`` catches the
CancelledError, sees that the inner ``get()`` has already finished, and returns
its result instead of re-raising, so the stop request is lost and the consumer
keeps polling.

Natural timing: the broker delivers a record at 0.1 s, the consumer handles it
and is back inside a fresh ``wait_for`` long before ``stop()`` at 0.6 s, so the
cancellation propagates. Bad interleaving: the record and the stop land in the
same loop iteration (e.g. the loop is busy from 0.05 s to 0.7 s): the ``get()``
task completes, then the consumer resumes with CancelledError while ``get()``
is done, and the cancellation is swallowed.
"""
import asyncio

import pytest

DELIVER_AT = 0.1
STOP_AT = 0.6
POLL_TIMEOUT = 5.0


class Consumer:
    def __init__(self):
        self.fetch_queue = asyncio.Queue()
        self.handled = []

    async def run(self):
        while True:
            record = await asyncio.wait_for(self.fetch_queue.get(), POLL_TIMEOUT)
            self.handled.append(record)


async def broker(consumer):
    await asyncio.sleep(DELIVER_AT)
    consumer.fetch_queue.put_nowait({"topic": "orders", "offset": 0})


@pytest.mark.asyncio
async def test_stop_cancels_the_consumer_loop():
    consumer = Consumer()
    task = asyncio.create_task(consumer.run())
    delivery = asyncio.create_task(broker(consumer))
    await asyncio.sleep(STOP_AT)
    task.cancel()                                     # consumer.stop()
    done, _ = await asyncio.wait({task}, timeout=2)
    try:
        assert task in done and task.cancelled(), \
            "stop() was swallowed: the consumer is still polling"
        assert consumer.handled == [{"topic": "orders", "offset": 0}]
    finally:
        task.cancel()
        await asyncio.gather(task, delivery, return_exceptions=True)
