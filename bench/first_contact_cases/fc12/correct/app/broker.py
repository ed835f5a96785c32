"""In-process pub/sub: topic patterns (`orders.*`), bounded subscriber queues that drop the
oldest message when full, and a way to wait until a pattern has subscribers."""
import asyncio
import fnmatch

from . import metrics

_CLOSED = object()


class SubscriptionClosed(Exception):
    pass


class Subscription:
    def __init__(self, broker, pattern, maxsize):
        self.broker = broker
        self.pattern = pattern
        self.queue = asyncio.Queue(maxsize)
        self.dropped = 0
        self.closed = False

    def matches(self, topic):
        return fnmatch.fnmatchcase(topic, self.pattern)

    def _offer(self, item):
        if self.queue.full():
            self.queue.get_nowait()
            self.dropped += 1
            metrics.incr("broker.dropped")
        self.queue.put_nowait(item)

    async def get(self):
        if self.closed and self.queue.empty():
            raise SubscriptionClosed(self.pattern)
        item = await self.queue.get()
        if item is _CLOSED:
            self.closed = True
            raise SubscriptionClosed(self.pattern)
        return item

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            return await self.get()
        except SubscriptionClosed:
            raise StopAsyncIteration from None

    def close(self):
        self.broker._remove(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Broker:
    def __init__(self):
        self._subs = []
        self._changed = None
        self.published = 0

    def subscribe(self, pattern, maxsize=100) -> Subscription:
        sub = Subscription(self, pattern, maxsize)
        self._subs.append(sub)
        self._notify()
        return sub

    def _remove(self, sub):
        if sub in self._subs:
            self._subs.remove(sub)
            sub._offer(_CLOSED)
            sub.closed = True
            self._notify()

    def _notify(self):
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def subscriber_count(self, topic) -> int:
        return sum(1 for s in self._subs if s.matches(topic))

    async def wait_for_subscribers(self, topic, n=1):
        while self.subscriber_count(topic) < n:
            if self._changed is None:
                self._changed = asyncio.Event()
            await self._changed.wait()

    def publish(self, topic, message) -> int:
        self.published += 1
        delivered = 0
        for sub in list(self._subs):
            if sub.matches(topic):
                sub._offer((topic, message))
                delivered += 1
        metrics.incr("broker.delivered", delivered)
        return delivered

    def close(self):
        for sub in list(self._subs):
            sub.close()
