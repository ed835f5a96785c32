"""Model of bpo-27585, "asyncio.Lock deadlock after cancellation"
(https://github.com/python/cpython/pull/1031, "Cancelled lock waiter wakes up the next one";
earlier https://github.com/python/asyncio/pull/467). The lock below is the pre-fix algorithm:
release() wakes the first waiter by resolving its future; a waiter that is cancelled after being
woken but before it runs removes itself and does not pass the wake-up on.

A holder keeps the lock for 0.1 s. W1 (queued first) waits with `wait_for(lock.acquire(), 0.5)`;
W2 (queued second) waits without a deadline of its own. Under natural timing W1 gets the lock at
0.1 s, uses it briefly and releases it, then W2 gets it.

Bad interleaving: the holder's wake-up and W1's 0.5 s timeout are processed in the same loop
iteration (the loop busy from before 0.1 s to after 0.5 s). The holder releases and wakes W1's
future, then wait_for cancels W1's acquire before it runs. W1 drops out without waking W2, so W2
waits forever on a lock nobody holds.
"""
import asyncio
import collections

import pytest


class PreFixLock:
    def __init__(self):
        self._locked = False
        self._waiters = collections.deque()

    async def acquire(self):
        if not self._locked and all(w.cancelled() for w in self._waiters):
            self._locked = True
            return True
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut
            self._locked = True
            return True
        finally:
            self._waiters.remove(fut)

    def release(self):
        self._locked = False
        for fut in self._waiters:
            if not fut.done():
                fut.set_result(True)
                break

    def locked(self):
        return self._locked


@pytest.mark.asyncio
async def test_second_waiter_gets_the_free_lock():
    lock = PreFixLock()
    log = []
    await lock.acquire()

    async def holder():
        await asyncio.sleep(0.1)
        lock.release()

    async def w1():
        try:
            await asyncio.wait_for(lock.acquire(), 0.5)
        except asyncio.TimeoutError:
            log.append("w1 timed out")
            return
        log.append("w1")
        await asyncio.sleep(0.01)
        lock.release()

    async def w2():
        await lock.acquire()
        log.append("w2")
        lock.release()

    t1 = asyncio.create_task(w1())
    await asyncio.sleep(0)
    t2 = asyncio.create_task(w2())
    await asyncio.sleep(0)
    await holder()
    try:
        await asyncio.wait_for(asyncio.gather(t1, t2), 2.0)
    except asyncio.TimeoutError:
        pytest.fail(f"w2 stranded: locked={lock.locked()} log={log}")
    assert log[-1] == "w2"
