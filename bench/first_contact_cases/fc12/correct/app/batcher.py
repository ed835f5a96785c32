"""A DataLoader-style batcher: load() calls made before the loop next runs its callbacks are
dispatched as one batch (split by max_batch); results are cached per key."""
import asyncio

from . import metrics


class BatchError(RuntimeError):
    pass


class DataLoader:
    def __init__(self, batch_fn, max_batch=100, cache=True):
        self.batch_fn = batch_fn
        self.max_batch = max_batch
        self.cache_enabled = cache
        self._cache = {}
        self._queue = []
        self._scheduled = False
        self._tasks = set()

    def load(self, key) -> asyncio.Future:
        if self.cache_enabled and key in self._cache:
            return self._cache[key]
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        if self.cache_enabled:
            self._cache[key] = fut
        self._queue.append((key, fut))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._dispatch)
        return fut

    async def load_many(self, keys):
        return await asyncio.gather(*(self.load(k) for k in keys))

    def clear(self, key):
        self._cache.pop(key, None)

    def _dispatch(self):
        queue, self._queue = self._queue, []
        self._scheduled = False
        for i in range(0, len(queue), self.max_batch):
            task = asyncio.create_task(self._run(queue[i:i + self.max_batch]))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, chunk):
        keys = [k for k, _ in chunk]
        metrics.incr("loader.batches")
        try:
            values = await self.batch_fn(keys)
            if len(values) != len(keys):
                raise BatchError(f"batch function returned {len(values)} values for {len(keys)} keys")
        except Exception as exc:
            for key, fut in chunk:
                self._cache.pop(key, None)
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (key, fut), value in zip(chunk, values):
            if fut.done():
                continue
            if isinstance(value, Exception):
                self._cache.pop(key, None)
                fut.set_exception(value)
            else:
                fut.set_result(value)
