"""A consumer checks "empty", awaits a flush, then registers its waiter: lost wake-up.

Modelled on modelcontextprotocol/python-sdk#2535 ("Notify before wait: if
update_task completes (calling notify_update) before wait_for_update is
called, the signal is lost because no event exists yet.  The waiter blocks
until the next update, which never comes") and rohanpm/more-executors#12
("one case where jobs could be added without waking up the thread, which
could hang forever").

``AckingInbox`` is fed by a network thread.  The thread appends a message
under a lock and, if a waiter future is registered, wakes it with
``call_soon_threadsafe``.  The async ``receive()`` sees the inbox empty, then
- before registering its waiter - awaits ``_flush_acks()`` (acks are written
by a blocking client in the default executor).  A message that arrives during
that flush finds no waiter, so nobody is woken; ``receive()`` then registers a
waiter and sleeps although a message is waiting.
"""

import asyncio
import collections
import threading
import time

import pytest

MESSAGES = 10
ARRIVAL_GAP = 0.003     # the network thread's spacing between messages
ACK_WRITE = 0.0028      # one blocking ack write in the executor


class AckingInbox:
    def __init__(self, loop):
        self._loop = loop
        self._lock = threading.Lock()
        self._messages = collections.deque()
        self._waiter = None
        self._pending_acks = []
        self.acked = []

    # network thread
    def deliver(self, msg):
        with self._lock:
            self._messages.append(msg)
            waiter = self._waiter
        if waiter is not None:
            self._loop.call_soon_threadsafe(
                lambda: waiter.done() or waiter.set_result(None))

    def _write_acks(self, acks):
        time.sleep(ACK_WRITE)
        self.acked.extend(acks)

    async def _flush_acks(self):
        acks, self._pending_acks = self._pending_acks, []
        if acks:
            await self._loop.run_in_executor(None, self._write_acks, acks)

    async def receive(self):
        while True:
            with self._lock:
                if self._messages:
                    msg = self._messages.popleft()
                    self._waiter = None
                    self._pending_acks.append(msg)
                    return msg
            await self._flush_acks()          # BUG: await between the check ...
            with self._lock:
                self._waiter = self._loop.create_future()   # ... and the register
                waiter = self._waiter
            await waiter


@pytest.mark.asyncio
async def test_every_message_is_received_promptly():
    inbox = AckingInbox(asyncio.get_running_loop())

    def network():
        for i in range(MESSAGES):
            time.sleep(ARRIVAL_GAP)
            inbox.deliver(i)

    t = threading.Thread(target=network, daemon=True)
    t.start()
    got = []
    for _ in range(MESSAGES):
        # generous: each message arrives within a few ms of the previous one
        got.append(await asyncio.wait_for(inbox.receive(), 1.0))
    await asyncio.to_thread(t.join, 5)
    assert got == list(range(MESSAGES))
