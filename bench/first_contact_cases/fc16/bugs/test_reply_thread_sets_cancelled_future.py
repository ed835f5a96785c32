"""An RPC reader thread resolves asyncio futures with fut.set_result().

Modelled on aiidateam/kiwipy#70 (the thread-side callback called
set_exception/set_result on an asyncio future directly, which is not thread
safe; fixed in kiwipy#71 by scheduling it on the future's loop with
call_soon_threadsafe) and on agronholm/apscheduler#437 (set_result from a
BackgroundScheduler job).

The reader checks `fut.done()`, verifies the reply's checksum (GIL released)
and then calls `fut.set_result` from its own thread.  The caller awaits the
future under wait_for with a timeout close to the server's reply time.  When
wait_for's timeout cancels the future between the reader's check and its
set_result, the reader thread dies with InvalidStateError and every later
call can only time out.

Kind: race (thread hands a result to the loop unsafely; check-then-act across threads).
"""
import asyncio
import hashlib
import queue
import threading
import time

import pytest

CALLS = 1
TIMEOUT = 0.020
REPLY_AFTER = 0.019
REPLY = b"\x01" * (2 << 20)


class RpcClient:
    def __init__(self, loop):
        self.loop = loop
        self.pending = {}
        self.requests = queue.SimpleQueue()
        self.reader_errors = []
        self.next_id = 0
        self.thread = threading.Thread(target=self._reader, name="fc16-rpc-reader")
        self.thread.start()

    def _reader(self):
        try:
            while True:
                rid = self.requests.get()
                if rid is None:
                    return
                time.sleep(REPLY_AFTER)  # the server answers
                fut = self.pending.pop(rid, None)
                if fut is None or fut.done():
                    continue
                body = hashlib.sha256(REPLY).hexdigest()  # verify the reply
                fut.set_result(body)  # BUG: should be loop.call_soon_threadsafe
        except BaseException as e:  # the reader dies
            self.reader_errors.append(e)

    async def call(self):
        self.next_id += 1
        rid = self.next_id
        fut = self.loop.create_future()
        self.pending[rid] = fut
        self.requests.put(rid)
        try:
            return await asyncio.wait_for(fut, TIMEOUT)
        finally:
            self.pending.pop(rid, None)

    async def close(self):
        self.requests.put(None)
        await asyncio.to_thread(self.thread.join)


@pytest.mark.asyncio
async def test_reader_survives_timeouts():
    client = RpcClient(asyncio.get_running_loop())
    answered = timed_out = 0
    try:
        for _ in range(CALLS):
            try:
                await client.call()
                answered += 1
            except asyncio.TimeoutError:
                timed_out += 1  # acceptable: the caller retries later
    finally:
        await client.close()
    assert answered + timed_out == CALLS
    assert client.reader_errors == [], f"reader thread died: {client.reader_errors!r}"
