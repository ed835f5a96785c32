"""An OPC UA-style client that registers a new subscription only after a second round trip.

Paraphrased from FreeOpcUa/opcua-asyncio (see README.md): the server starts publishing as soon as
it has created the subscription; a publish result that arrives before the client has stored its
internal subscription object finds no subscription for its id and is dropped.
"""

import asyncio
import random


class FakeServer:
    def __init__(self) -> None:
        self._next_id = 1

    async def create_subscription(self, publish_callback) -> int:
        await asyncio.sleep(random.uniform(0.0003, 0.001))  # CreateSubscription round trip
        subscription_id = self._next_id
        self._next_id += 1
        # The server publishes the first data change after its publishing interval.
        asyncio.get_running_loop().call_later(random.uniform(0.0002, 0.006), publish_callback, subscription_id,
                                              {"node": "ns=2;i=7", "value": 42})
        return subscription_id

    async def create_monitored_items(self, subscription_id: int, nodes: list) -> list:
        await asyncio.sleep(random.uniform(0.0005, 0.0015))  # CreateMonitoredItems round trip
        return [f"{subscription_id}:{n}" for n in nodes]


class Subscription:
    def __init__(self, server: FakeServer, subscription_id: int, handler) -> None:
        self._server = server
        self.subscription_id = subscription_id
        self._handler = handler
        self.items: list = []

    async def subscribe_data_change(self, nodes: list) -> None:
        self.items = await self._server.create_monitored_items(self.subscription_id, nodes)

    def publish_result(self, data: dict) -> None:
        self._handler(data)


class Client:
    def __init__(self, server: FakeServer) -> None:
        self._server = server
        self._subscriptions: dict = {}
        self.unknown_publishes: list = []

    def _publish_callback(self, subscription_id: int, data: dict) -> None:
        subscription = self._subscriptions.get(subscription_id)
        if subscription is None:
            self.unknown_publishes.append(subscription_id)  # logged as "unknown subscription"
            return
        subscription.publish_result(data)

    async def create_subscription(self, nodes: list, handler) -> Subscription:
        subscription_id = await self._server.create_subscription(self._publish_callback)
        subscription = Subscription(self._server, subscription_id, handler)
        await subscription.subscribe_data_change(nodes)
        self._subscriptions[subscription_id] = subscription
        return subscription
