"""Log records forwarded into an asyncio.Queue straight from a worker thread.

Modelled on hatchet-dev/hatchet#3805 (a logging handler's publish() called
asyncio.Queue.put_nowait from an asyncio.to_thread worker, so a consumer that
was already parked in queue.get() was never woken and the forwarded logs
stalled; the fix hands the put to the loop with call_soon_threadsafe) and on
reactive-python/reactpy#222 and OceanDataTools/openrvdas#574 (same misuse of
put_nowait from a non-loop thread).

Here a job runs in asyncio.to_thread and logs a warning; the job then waits
(up to 1 s) for the alert to reach the sink before it carries on.  The
consumer task first "connects to the sink" (a short sleep) and then parks in
queue.get().  If the warning is logged before the consumer parks, it is
picked up; if the consumer is already parked, put_nowait wakes its getter
future from the wrong thread, the loop never leaves select(), and the alert
reaches the sink only after the job has given up.

Kind: race (thread hands a result to the loop unsafely).
"""
import asyncio
import hashlib
import logging
import threading

import pytest

CONNECT = 0.002                     # consumer start-up before it parks in get()
BEFORE_ALERT = b"\x5a" * 4_500_000  # work the job does before it logs (GIL released)


class Forwarder:
    def __init__(self):
        self.queue = asyncio.Queue()
        self.alert_seen = threading.Event()
        self.sink = []

    def publish(self, record):
        # BUG: runs on whatever thread logged; asyncio.Queue is loop-only.
        self.queue.put_nowait(record)

    async def consume(self):
        await asyncio.sleep(CONNECT)  # open the connection to the sink
        while True:
            record = await self.queue.get()
            self.sink.append(record.getMessage())
            if record.levelno >= logging.WARNING:
                self.alert_seen.set()


class ForwardingHandler(logging.Handler):
    def __init__(self, forwarder):
        super().__init__()
        self.forwarder = forwarder

    def emit(self, record):
        self.forwarder.publish(record)


def job(logger, forwarder):
    hashlib.sha256(BEFORE_ALERT).digest()
    logger.warning("disk latency above limit")
    # the alert must reach the sink while the job is still running
    return forwarder.alert_seen.wait(1.0)


@pytest.mark.asyncio
async def test_alert_reaches_sink_while_job_runs():
    forwarder = Forwarder()
    logger = logging.getLogger("fc16.bugs.forwarder")
    logger.propagate = False
    handler = ForwardingHandler(forwarder)
    logger.addHandler(handler)
    consumer = asyncio.ensure_future(forwarder.consume())
    try:
        delivered_in_time = await asyncio.to_thread(job, logger, forwarder)
    finally:
        logger.removeHandler(handler)
        consumer.cancel()
        try:
            await consumer
        except asyncio.CancelledError:
            pass
    assert delivered_in_time, "alert was not forwarded while the job was running"
