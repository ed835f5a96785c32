"""Model of https://github.com/agronholm/anyio/issues/387 ("Potential race
condition in Lock", seen through httpx/httpcore in production).

A fair lock hands ownership straight to the first queued waiter on release().
If that waiter's task was cancelled but has not run yet, it still sits in the
queue, is made the owner, wakes up with CancelledError and leaves without
releasing. The lock now belongs to a finished task forever.

Here the lock serialises writes on one HTTP/2-style connection. Request A
writes for 0.3 s; request B queues behind it with a 0.8 s deadline implemented
as ``call_later(deadline, task.cancel)``; request C comes at 1.0 s. Natural
timing: A releases at 0.3 s, B writes and finishes, B's deadline is cancelled,
C gets the lock. Bad interleaving: the loop is busy across 0.3 s and 0.8 s
(e.g. from 0.05 s to 0.9 s): B's deadline fires before A's write task resumes,
then A's release() hands the lock to the cancelled B.
"""
import asyncio

import pytest

A_WRITE_TIME = 0.3
B_DEADLINE = 0.8
C_STARTS_AT = 1.0


class FairLock:
    """Paraphrase of the hand-over design of the reported lock."""

    def __init__(self):
        self._owner = None
        self._waiters = []          # [(task, event)]

    async def acquire(self):
        me = asyncio.current_task()
        if self._owner is None and not self._waiters:
            self._owner = me
            return
        event = asyncio.Event()
        entry = (me, event)
        self._waiters.append(entry)
        try:
            await event.wait()
        except BaseException:
            if entry in self._waiters:
                self._waiters.remove(entry)
            raise

    def release(self):
        if self._waiters:
            task, event = self._waiters.pop(0)
            self._owner = task
            event.set()
        else:
            self._owner = None

    async def __aenter__(self):
        await self.acquire()

    async def __aexit__(self, *exc):
        self.release()


class Connection:
    def __init__(self):
        self.write_lock = FairLock()
        self.frames = []

    async def request(self, name, write_time):
        async with self.write_lock:
            await asyncio.sleep(write_time)
            self.frames.append(name)
        return name


async def request_with_deadline(conn, name, write_time, deadline):
    task = asyncio.current_task()
    handle = asyncio.get_running_loop().call_later(deadline, task.cancel)
    try:
        return await conn.request(name, write_time)
    finally:
        handle.cancel()


@pytest.mark.asyncio
async def test_lock_usable_after_a_waiter_times_out():
    conn = Connection()
    a = asyncio.create_task(conn.request("A", A_WRITE_TIME))
    await asyncio.sleep(0.01)
    b = asyncio.create_task(request_with_deadline(conn, "B", 0.01, B_DEADLINE))
    await asyncio.sleep(C_STARTS_AT - 0.01)
    c = asyncio.create_task(conn.request("C", 0.01))
    try:
        done, _ = await asyncio.wait({c}, timeout=2)
        assert c in done, (f"lock stuck: owned by a finished task "
                           f"(B cancelled: {b.cancelled()})")
        assert conn.frames[0] == "A" and conn.frames[-1] == "C"
    finally:
        for t in (a, b, c):
            t.cancel()
        await asyncio.gather(a, b, c, return_exceptions=True)
