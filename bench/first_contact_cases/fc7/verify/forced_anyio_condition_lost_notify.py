"""Condition.notify() is lost when the notified waiter is being cancelled.

Report: https://github.com/agronholm/anyio/pull/1075 ("Fix Condition.wait()
lost notification on task cancellation"); same bug class in asyncio:
https://github.com/python/cpython/issues/112202.

Race: ``notify(1)`` pops the first waiter's event from ``_waiters`` and sets
it.  If that waiter task is cancelled in the window between its cancellation
and its except-branch running (or right after the event was set), the
except-branch sees ``event.is_set()`` and does nothing, re-raising the
CancelledError.  The notification was consumed by a task that will never act
on it, and the other waiter is never woken (lost wakeup).
Shared state: ``Condition._waiters``; the await is ``await event.wait()`` in
``wait()``.

Under plain pytest the consumer is cancelled 30 ms before the producer
notifies, so it has already removed itself and the notification reaches the
second consumer.
"""
import asyncio
import collections

import pytest

EXPECTED = {"cause": "lost_wakeup", "resource": "_waiters"}


class Condition:
    def __init__(self):
        self._lock = asyncio.Lock()
        self._waiters = collections.deque()

    async def __aenter__(self):
        await self._lock.acquire()

    async def __aexit__(self, *exc):
        self._lock.release()

    async def wait(self):
        event = asyncio.Event()
        self._waiters.append(event)
        self._lock.release()
        try:
            await event.wait()
        except BaseException:
            if not event.is_set():
                self._waiters.remove(event)
            raise  # BUG: a consumed notification is not forwarded
        finally:
            await self._lock.acquire()

    def notify(self, n=1):
        for _ in range(n):
            if not self._waiters:
                return
            self._waiters.popleft().set()


@pytest.mark.asyncio
async def test_forced_item_reaches_remaining_consumer():
    cond = Condition()
    items = []
    got = []

    async def consumer(name):
        async with cond:
            while not items:
                await cond.wait()
            got.append((name, items.pop()))

    c1 = asyncio.create_task(consumer("c1"))
    c2 = asyncio.create_task(consumer("c2"))

    async def shutdown_c1():
        await asyncio.sleep(0.01)
        c1.cancel()

    async def producer():
        await asyncio.sleep(0.01)
        async with cond:
            items.append("job")
            cond.notify(1)

    await asyncio.gather(shutdown_c1(), producer())
    await asyncio.gather(c1, return_exceptions=True)
    try:
        await asyncio.wait_for(c2, timeout=0.5)
    except asyncio.TimeoutError:
        pytest.fail("notification lost: c2 never woke although an item is queued")
    assert got == [("c2", "job")]
