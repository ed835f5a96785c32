"""Closing a thread->asyncio queue bridge can lose the last item.

Modelled on seqan/seqan3#2276 ("one producer thread adds an item to the empty
queue and closes the queue immediately.  In the meantime a consumer could have
observed the empty queue right before the element was added and then checked
the closed_flag shortly after ... the consumer falsely interprets the queue as
empty and closed, while there is still an item left") and zio/zio#10024
(shutting a queue down right after the last offer races with consumption).

``ThreadBridge.put`` ships each item to the loop with ``call_soon_threadsafe``
(it is delivered when the loop gets to it), but ``close()`` flips a plain
``closed`` flag that the consumer sees *immediately*.  The consumer hashes
each chunk (hashlib releases the GIL on big buffers, so the producer thread
runs meanwhile) and then asks for the next one: if the last ``put`` and the
``close`` both happened during that hash, the consumer finds the loop-side
deque empty, the flag set, and stops - the last chunk is still sitting in the
loop's ready queue.
"""

import asyncio
import collections
import hashlib
import threading
import time

import pytest

CHUNKS = 20
CHUNK_SIZE = 3 << 20          # 3 MiB: sha256 takes about as long as PRODUCE_GAP
PRODUCE_GAP = 0.002           # the producer reads its next chunk from disk


class ThreadBridge:
    def __init__(self, loop):
        self._loop = loop
        self._items = collections.deque()
        self._waiter = None
        self.closed = False

    # -- thread side --
    def put(self, item):
        self._loop.call_soon_threadsafe(self._deliver, item)

    def close(self):
        self.closed = True                               # visible at once
        self._loop.call_soon_threadsafe(self._wake)      # delivered later

    # -- loop side --
    def _deliver(self, item):
        self._items.append(item)
        self._wake()

    def _wake(self):
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def __aiter__(self):
        return self

    async def __anext__(self):
        while True:
            if self._items:
                return self._items.popleft()
            if self.closed:                              # BUG: deliveries may
                raise StopAsyncIteration                 # still be in flight
            self._waiter = self._loop.create_future()
            await self._waiter


@pytest.mark.asyncio
async def test_consumer_sees_every_chunk():
    loop = asyncio.get_running_loop()
    bridge = ThreadBridge(loop)

    def producer():
        for i in range(CHUNKS):
            bridge.put((i, bytes([i]) * CHUNK_SIZE))
            time.sleep(PRODUCE_GAP)
        bridge.close()

    t = threading.Thread(target=producer, daemon=True)
    t.start()
    seen = []
    async for i, chunk in bridge:
        hashlib.sha256(chunk).hexdigest()                # checksum each chunk
        seen.append(i)
    await asyncio.to_thread(t.join, 5)
    assert seen == list(range(CHUNKS))
