"""TTL cache, single-flight call coalescing, and a cached loader built from both."""
import asyncio

from . import metrics


class TTLCache:
    def __init__(self, ttl, clock, maxsize=1024):
        self.ttl = ttl
        self.clock = clock
        self.maxsize = maxsize
        self._data = {}

    def get(self, key, default=None):
        item = self._data.get(key)
        if item is None:
            return default
        value, expires = item
        if self.clock() >= expires:
            del self._data[key]
            return default
        return value

    def set(self, key, value):
        if key not in self._data and len(self._data) >= self.maxsize:
            # evict the entry that expires first
            oldest = min(self._data, key=lambda k: self._data[k][1])
            del self._data[oldest]
        self._data[key] = (value, self.clock() + self.ttl)

    def invalidate(self, key):
        self._data.pop(key, None)

    def __len__(self):
        return len(self._data)


class SingleFlight:
    """Concurrent calls for one key share a single execution. A waiter that is cancelled does
    not cancel the shared call; the call is cancelled only when its last waiter goes away."""

    def __init__(self):
        self._calls = {}  # key -> [task, waiters]

    def in_flight(self, key) -> bool:
        return key in self._calls

    async def do(self, key, fn):
        entry = self._calls.get(key)
        if entry is None:
            task = asyncio.ensure_future(fn())
            entry = self._calls[key] = [task, 0]
            task.add_done_callback(lambda t, k=key, e=entry: self._done(k, e))
            metrics.incr("singleflight.leader")
        else:
            metrics.incr("singleflight.shared")
        entry[1] += 1
        try:
            return await asyncio.shield(entry[0])
        finally:
            entry[1] -= 1
            if entry[1] == 0 and not entry[0].done():
                entry[0].cancel()

    def _done(self, key, entry):
        if self._calls.get(key) is entry:
            del self._calls[key]


class CachedLoader:
    def __init__(self, load, ttl, clock):
        self._load = load
        self.cache = TTLCache(ttl, clock)
        self.flight = SingleFlight()

    async def get(self, key):
        hit = self.cache.get(key, _MISS)
        if hit is not _MISS:
            metrics.incr("cache.hit")
            return hit
        metrics.incr("cache.miss")

        async def load():
            value = await self._load(key)
            self.cache.set(key, value)
            return value

        return await self.flight.do(key, load)


_MISS = object()
