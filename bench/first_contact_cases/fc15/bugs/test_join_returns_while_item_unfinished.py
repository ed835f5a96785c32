"""``join()`` returns while an item is still being processed.

Modelled on aio-libs/janus#715 ("Due to the way call_soon_threadsafe() works,
calling SyncQueue.task_done() has one side effect: a race is possible between
queue._finished.set() and queue._finished.clear().  As a result,
queue._finished ... can be set even when there were more put() calls than
task_done() calls").

``MixedQueue`` tracks unfinished items under a ``threading.Lock``.  The
async ``put`` clears the ``asyncio.Event`` ``_finished`` right away; the
worker thread's ``task_done`` *schedules* ``_finished.set()`` with
``call_soon_threadsafe`` when the count drops to zero.  If the producer's next
``put`` runs between that scheduling and the callback, the stale ``set()``
arrives after the ``clear()``: ``join()`` then sees the event set and returns
although the last item is still being processed.  The producer checksums each
record before queueing it (hashlib releases the GIL), which is when the worker
thread tends to finish the previous item.
"""

import asyncio
import collections
import hashlib
import threading
import time

import pytest

ITEMS = 12
WORK = 0.00105         # the worker's per-item processing
PRODUCE_GAP = 0.001    # the producer awaits its input between items
RECORD = b"r" * (1 << 20)   # the producer checksums each record before queueing


class MixedQueue:
    def __init__(self, loop):
        self._loop = loop
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._items = collections.deque()
        self._unfinished = 0
        self._finished = asyncio.Event()
        self._finished.set()

    async def put(self, item):
        with self._lock:
            self._items.append(item)
            self._unfinished += 1
            self._cond.notify()
        self._finished.clear()

    def get(self):                      # worker thread
        with self._lock:
            while not self._items:
                self._cond.wait()
            return self._items.popleft()

    def task_done(self):                # worker thread
        with self._lock:
            self._unfinished -= 1
            if self._unfinished == 0:
                self._loop.call_soon_threadsafe(self._finished.set)

    async def join(self):
        with self._lock:
            if self._unfinished == 0:
                return
        await self._finished.wait()


@pytest.mark.asyncio
async def test_join_waits_for_every_item():
    q = MixedQueue(asyncio.get_running_loop())
    processed = []

    def worker():
        while True:
            item = q.get()
            if item is None:
                return
            time.sleep(WORK)
            processed.append(item)
            q.task_done()

    t = threading.Thread(target=worker, daemon=True)
    t.start()
    for i in range(ITEMS):
        if i:
            await asyncio.sleep(PRODUCE_GAP)
        hashlib.sha256(RECORD).digest()      # releases the GIL: the worker runs
        await q.put(i)
    await asyncio.wait_for(q.join(), 5)
    done_at_join = list(processed)
    await q.put(None)
    await asyncio.to_thread(t.join, 5)
    assert done_at_join == list(range(ITEMS)), (
        f"join() returned with only {len(done_at_join)}/{ITEMS} items processed")
