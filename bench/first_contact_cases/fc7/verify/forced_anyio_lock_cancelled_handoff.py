"""Lock handed to a waiter that is cancelled before it resumes stays locked forever.

Report: https://github.com/agronholm/anyio/issues/398 ("Deadlock in anyio.Lock",
linked from https://github.com/encode/httpcore/issues/454).

Race: ``release()`` hands ownership directly to the first queued waiter
(``_owner = waiter_task``) and resolves its future.  If that waiter is
cancelled after the hand-off but before it runs again, ``await fut`` raises
CancelledError inside ``acquire()``; the except-branch only removes the waiter
from ``_waiters`` (it is no longer there) and re-raises, so ``__aexit__`` never
runs and nobody releases the lock it now owns.
Shared state: ``HandoffLock._owner``; the await is ``await fut`` in
``acquire()``; the interleaving is release() -> waiter.cancel() -> waiter resumes.

Under plain pytest the cancel is issued first (its timer was scheduled
first), the waiter's future is cancelled, release() skips it, and the lock is
free again: the test passes.
"""
import asyncio
import collections

import pytest

EXPECTED = {"cause": "cancelled_handoff", "resource": "_owner"}


class HandoffLock:
    def __init__(self):
        self._owner = None
        self._waiters = collections.deque()

    async def acquire(self):
        task = asyncio.current_task()
        if self._owner is None and not self._waiters:
            self._owner = task
            return
        fut = asyncio.get_running_loop().create_future()
        entry = (task, fut)
        self._waiters.append(entry)
        try:
            await fut
        except BaseException:
            if entry in self._waiters:  # BUG: ignores "already handed to me"
                self._waiters.remove(entry)
            raise

    def release(self):
        while self._waiters:
            task, fut = self._waiters.popleft()
            if not fut.done():
                self._owner = task  # ownership transferred before the waiter runs
                fut.set_result(None)
                return
        self._owner = None

    async def __aenter__(self):
        await self.acquire()

    async def __aexit__(self, *exc):
        self.release()


@pytest.mark.asyncio
async def test_forced_lock_usable_after_waiter_is_cancelled():
    lock = HandoffLock()
    await lock.acquire()  # the "holder"

    async def waiter():
        async with lock:
            await asyncio.sleep(0.01)

    w = asyncio.create_task(waiter())
    await asyncio.sleep(0)  # w is now queued

    async def canceller():
        await asyncio.sleep(0.01)
        w.cancel()

    async def holder_release():
        await asyncio.sleep(0.01)
        lock.release()

    await asyncio.gather(holder_release(), canceller())
    await asyncio.gather(w, return_exceptions=True)
    # A third party must now be able to take the lock.
    await asyncio.wait_for(lock.acquire(), timeout=0.5)
    lock.release()
