"""unittest.IsolatedAsyncioTestCase suite, as in projects that kept unittest-style
tests (aiosqlite, Django channels layers, aiosmtpd) and run them under pytest.

A tiny async key/value store with a background flusher task: asyncSetUp opens it,
asyncTearDown closes it, addAsyncCleanup / enterAsyncContext manage extra resources.
"""
import asyncio
import unittest


class AsyncStore:
    def __init__(self, flush_interval=0.05):
        self._data = {}
        self._dirty = set()
        self.flushed = []          # batches written to "disk"
        self.flush_event = asyncio.Event()
        self._interval = flush_interval
        self._task = None
        self.closed = False

    async def open(self):
        self._task = asyncio.create_task(self._flusher(), name="store-flusher")
        return self

    async def _flusher(self):
        while True:
            await asyncio.sleep(self._interval)
            if self._dirty:
                self.flushed.append(sorted(self._dirty))
                self._dirty.clear()
                self.flush_event.set()

    async def set(self, key, value):
        await asyncio.sleep(0)
        self._data[key] = value
        self._dirty.add(key)

    async def get(self, key):
        await asyncio.sleep(0)
        return self._data[key]

    async def incr(self, key):
        async with self._lock_for(key):
            value = self._data.get(key, 0)
            await asyncio.sleep(0)          # read-modify-write across an await
            self._data[key] = value + 1
            self._dirty.add(key)

    def _lock_for(self, key):
        locks = self.__dict__.setdefault("_locks", {})
        return locks.setdefault(key, asyncio.Lock())

    async def close(self):
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self.closed = True


class Transaction:
    def __init__(self, store):
        self.store = store
        self.state = "new"

    async def __aenter__(self):
        self.state = "open"
        return self

    async def __aexit__(self, *exc):
        await asyncio.sleep(0)
        self.state = "committed"
        return False


class StoreTests(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.store = await AsyncStore().open()
        self.log = []

    async def asyncTearDown(self):
        await self.store.close()
        self.assertTrue(self.store.closed)

    async def test_set_then_get(self):
        await self.store.set("a", 1)
        await self.store.set("b", 2)
        self.assertEqual(await self.store.get("a"), 1)
        self.assertEqual(await self.store.get("b"), 2)
        with self.assertRaises(KeyError):
            await self.store.get("missing")

    async def test_background_flush_writes_dirty_keys(self):
        await self.store.set("x", 1)
        await self.store.set("y", 2)
        await asyncio.wait_for(self.store.flush_event.wait(), 10)

        def flushed():
            return {k for batch in self.store.flushed for k in batch}

        # the two keys may land in one batch or in two (the flusher may run
        # between the two set() calls); wait until both were written.
        async with asyncio.timeout(10):
            while flushed() != {"x", "y"}:
                await asyncio.sleep(0.01)
        self.assertEqual(sum(len(b) for b in self.store.flushed), 2)

    async def test_concurrent_increments_are_not_lost(self):
        await asyncio.gather(*(self.store.incr("hits") for _ in range(25)))
        self.assertEqual(await self.store.get("hits"), 25)

    async def test_async_cleanups_run_lifo_after_teardown(self):
        order = []

        async def first_registered():
            # registered first, so it runs last: the others already ran
            self.assertEqual(order, ["third", "second"])
            self.assertTrue(self.store.closed)

        async def note(name):
            await asyncio.sleep(0)
            order.append(name)

        self.addAsyncCleanup(first_registered)
        self.addAsyncCleanup(note, "second")
        self.addAsyncCleanup(note, "third")
        await self.store.set("k", "v")


class EnterAsyncContextTests(unittest.IsolatedAsyncioTestCase):
    async def test_context_exits_before_earlier_cleanup(self):
        store = await AsyncStore().open()

        async def close_store_and_check():
            # enterAsyncContext registered its __aexit__ after this cleanup,
            # so the transaction is already committed when this runs.
            self.assertEqual(tx.state, "committed")
            await store.close()

        self.addAsyncCleanup(close_store_and_check)      # runs last
        tx = await self.enterAsyncContext(Transaction(store))
        self.assertEqual(tx.state, "open")
