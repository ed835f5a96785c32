"""Cancelled lock waiters left queued strand a later acquirer (lost wake-up).

Report: https://github.com/agronholm/anyio/pull/1145 ("Fix asyncio lock waiter
deadlocks after cancellation", released in anyio 4.14; production write-up in
https://github.com/Soju06/codex-lb/pull/2129).

Race: (1) owner holds the lock, W1 is queued; (2) W1 is cancelled - its
future is cancelled but its except-branch has not removed it from the deque
yet; (3) the owner releases: every queued future is done, so ``release()``
sets ``_owner = None`` but leaves W1 in ``_waiters``; (4) newcomer A sees a
non-empty deque and takes the slow path, queuing behind W1; (5) W1 removes
itself.  Now ``_waiters == [A]`` with no owner and nobody left to wake A.
Shared state: ``Lock._waiters`` / ``Lock._owner``; the awaits are
``await fut`` in ``acquire()`` for both W1 and A.

Under plain pytest the newcomer arrives 20 ms after the release, when W1 has
long since removed itself, so it takes the fast path and the test passes.
"""
import asyncio
import collections

import pytest

EXPECTED = {"cause": "lost_wakeup", "resource": "_waiters"}


class Lock:
    def __init__(self):
        self._owner = None
        self._waiters = collections.deque()

    async def acquire(self):
        task = asyncio.current_task()
        if self._owner is None and not self._waiters:
            self._owner = task
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            self._waiters.remove(fut)
            if not fut.cancelled():  # lock was handed to us: pass it on
                self._owner = task
                self.release()
            raise
        self._waiters.remove(fut)
        self._owner = task

    def release(self):
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(None)  # hand-off; waiter removes itself
                return
        self._owner = None  # BUG: cancelled futures are left in the deque


@pytest.mark.asyncio
async def test_forced_newcomer_gets_lock_after_cancelled_waiter():
    lock = Lock()
    await lock.acquire()  # owner
    w1 = asyncio.create_task(lock.acquire())
    await asyncio.sleep(0)

    async def cancel_w1():
        await asyncio.sleep(0.01)
        w1.cancel()

    async def owner_release():
        await asyncio.sleep(0.01)
        lock.release()

    async def newcomer():
        await asyncio.sleep(0.01)
        await lock.acquire()
        lock.release()
        return "got it"

    results = await asyncio.wait_for(
        asyncio.gather(cancel_w1(), owner_release(), newcomer(), w1, return_exceptions=True),
        timeout=1.0,
    )
    assert results[2] == "got it"
