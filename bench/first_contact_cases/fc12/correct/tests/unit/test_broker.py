import asyncio

import pytest
import pytest_asyncio

from app import metrics
from app.broker import Broker, SubscriptionClosed


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def broker():
    b = Broker()
    yield b
    b.close()


@pytest.mark.asyncio(loop_scope="module")
class TestSharedBroker:
    async def test_patterns_select_subscribers(self, broker, ns):
        orders, everything = broker.subscribe(f"{ns}.orders.*"), broker.subscribe(f"{ns}.*")
        with orders, everything:
            assert broker.publish(f"{ns}.orders.new", {"id": 1}) == 2
            assert broker.publish(f"{ns}.users.new", {"id": 2}) == 1
            assert await asyncio.wait_for(orders.get(), 20) == (f"{ns}.orders.new", {"id": 1})
            assert orders.queue.empty()
            assert everything.queue.qsize() == 2

    async def test_publish_without_subscribers(self, broker, ns):
        assert broker.publish(f"{ns}.nobody", 1) == 0

    async def test_full_queue_drops_the_oldest(self, broker, ns):
        with broker.subscribe(ns, maxsize=3) as sub:
            for i in range(5):
                broker.publish(ns, i)
            got = [await asyncio.wait_for(sub.get(), 20) for _ in range(3)]
        assert [m for _, m in got] == [2, 3, 4]
        assert sub.dropped == 2 and metrics.get("broker.dropped") == 2

    async def test_each_subscriber_sees_publish_order(self, broker, ns):
        subs = [broker.subscribe(ns) for _ in range(3)]
        for i in range(10):
            broker.publish(ns, i)
        for sub in subs:
            sub.close()
        for sub in subs:
            assert [m async for _, m in sub] == list(range(10))

    async def test_wait_for_subscribers(self, broker, ns):
        waiter = asyncio.create_task(broker.wait_for_subscribers(ns, 2))
        first = broker.subscribe(ns)
        await asyncio.sleep(0)
        assert not waiter.done()
        second = broker.subscribe(ns)
        await asyncio.wait_for(waiter, 20)
        first.close()
        second.close()
        assert broker.subscriber_count(ns) == 0

    async def test_closed_subscription_raises_after_draining(self, broker, ns):
        sub = broker.subscribe(ns)
        broker.publish(ns, "last")
        sub.close()
        assert await asyncio.wait_for(sub.get(), 20) == (ns, "last")
        with pytest.raises(SubscriptionClosed):
            await asyncio.wait_for(sub.get(), 20)
        with pytest.raises(SubscriptionClosed):
            await sub.get()


@pytest.mark.asyncio
async def test_closing_the_broker_ends_consumers():
    b = Broker()
    sub = b.subscribe("t")
    received = []

    async def consume():
        async for _, msg in sub:
            received.append(msg)

    consumer = asyncio.create_task(consume())
    b.publish("t", 1)
    await b.wait_for_subscribers("t", 1)
    b.close()
    await asyncio.wait_for(consumer, 20)
    assert received == [1] and b.subscriber_count("t") == 0
