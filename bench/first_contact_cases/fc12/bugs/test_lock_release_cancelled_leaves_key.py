"""Model of https://github.com/redis/redis-py/issues/3847 ("Async lock can enter a deadlock if it
is cancelled while being released"; fix https://github.com/redis/redis-py/pull/3900).

A distributed lock's release() forgets its token *before* the round trip that deletes the key.
A job holds the lock for 0.1 s of work and releases it (a 0.025 s round trip). A supervisor cancels
the job if it is still running at 0.5 s. Afterwards another worker must be able to take the lock.

Bad interleaving: the delete round trip is still in flight when the supervisor's cancel arrives
(the round trip takes longer than about 0.38 s, i.e. the job overruns the supervisor's 0.5 s
deadline). The cancel lands inside release(): the key stays in the store, the lock object thinks
it owns nothing, and nobody can ever take the lock again.
"""
import asyncio

import pytest


class Store:
    def __init__(self):
        self.data = {}

    async def set_nx(self, key, token):
        await asyncio.sleep(0.01)
        if key in self.data:
            return False
        self.data[key] = token
        return True

    async def delete_if(self, key, token):
        await asyncio.sleep(0.025)  # network round trip
        if self.data.get(key) == token:
            del self.data[key]


class RemoteLock:
    def __init__(self, store, key, token):
        self.store, self.key, self.token, self._mine = store, key, None, token

    async def acquire(self, timeout):
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not await self.store.set_nx(self.key, self._mine):
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.02)
        self.token = self._mine
        return True

    async def release(self):
        token, self.token = self.token, None  # the reported bug: cleared before the round trip
        await self.store.delete_if(self.key, token)


@pytest.mark.asyncio
async def test_lock_is_free_after_the_job():
    store = Store()

    async def job():
        lock = RemoteLock(store, "lock:report", "job-1")
        assert await lock.acquire(timeout=1)
        try:
            await asyncio.sleep(0.1)  # work
        finally:
            await lock.release()

    task = asyncio.create_task(job())

    async def supervisor():
        await asyncio.sleep(0.5)
        task.cancel()

    await asyncio.gather(supervisor(), asyncio.wait({task}))
    other = RemoteLock(store, "lock:report", "job-2")
    assert await other.acquire(timeout=0.5), f"lock left behind: {store.data}"
    await other.release()
