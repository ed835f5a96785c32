"""A native-callback thread resolves a future that a timeout just cancelled.

Modelled on awestlake87/pyo3-asyncio#78 ("if the Future is cancelled from
the Python side after this check but before the scheduled set_result call is
run (i.e. a race condition), Python will raise an InvalidStateError") and
empicano/aiomqtt#122 (InvalidStateError when cancellation lands between a
command and its callback).

``CallbackClient.request`` registers a future and hands the command to a
"native" thread that answers after ``LATENCY`` seconds.  The reply handler
checks ``fut.cancelled()`` *in the native thread* and then schedules
``fut.set_result`` with ``call_soon_threadsafe``.  The check and the set run
on different threads: a ``wait_for`` timeout can cancel the future after the
check passed and before the scheduled ``set_result`` runs, and the loop then
reports ``InvalidStateError`` from inside a callback.  Meanwhile a
background task checksums a file block by block (hashlib releases the GIL),
so the native thread gets to run while the loop is between steps.  Timeouts themselves are
acceptable to the caller; a loop error is not.
"""

import asyncio
import hashlib
import itertools
import threading
import time

import pytest

LATENCY = 0.021
TIMEOUT = 0.02
REQUESTS = 3
BLOCK = b"b" * (1 << 20)


async def checksum_stream(counter):
    # a background task that checksums a file cooperatively, block by block
    while True:
        hashlib.sha256(BLOCK).digest()        # releases the GIL
        counter.append(1)
        await asyncio.sleep(0)


class CallbackClient:
    def __init__(self, loop):
        self._loop = loop
        self._pending = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._threads = []

    def _native_send(self, req_id, payload):
        # stands in for a C library that calls back from its own thread
        def work():
            time.sleep(LATENCY)
            self._on_reply(req_id, payload.upper())
        t = threading.Thread(target=work, daemon=True)
        self._threads.append(t)
        t.start()

    def _on_reply(self, req_id, value):
        with self._lock:
            fut = self._pending.pop(req_id, None)
        if fut is not None and not fut.cancelled():       # checked off-loop ...
            self._loop.call_soon_threadsafe(fut.set_result, value)  # ... set later

    async def request(self, payload):
        fut = self._loop.create_future()
        req_id = next(self._ids)
        with self._lock:
            self._pending[req_id] = fut
        self._native_send(req_id, payload)
        try:
            return await asyncio.wait_for(fut, TIMEOUT)
        finally:
            with self._lock:
                self._pending.pop(req_id, None)

    def join(self):
        for t in self._threads:
            t.join(5)


@pytest.mark.asyncio
async def test_timeouts_do_not_break_the_loop():
    loop = asyncio.get_running_loop()
    errors = []
    loop.set_exception_handler(lambda _l, ctx: errors.append(ctx))
    client = CallbackClient(loop)
    blocks = []
    bg = asyncio.create_task(checksum_stream(blocks))
    answered = timed_out = 0
    for i in range(REQUESTS):
        try:
            assert await client.request(f"ping{i}") == f"PING{i}"
            answered += 1
        except asyncio.TimeoutError:
            timed_out += 1
    bg.cancel()
    client.join()
    await asyncio.sleep(0.01)   # let already-scheduled callbacks run
    assert answered + timed_out == REQUESTS
    assert not errors, [str(e.get("exception")) for e in errors]
