"""A Redis-cluster client whose connection pool initialises the node map lazily, under a lock.

Paraphrased from alisaifee/coredis (see README.md): the initialisation runs under an asyncio.Lock
and re-checks `initialized` inside it, the fix proposed in the issue.
"""

import asyncio
import random


class ClusterUnreachable(Exception):
    pass


class FakeCluster:
    def __init__(self) -> None:
        self.slots_calls = 0
        self.data: dict = {}

    async def cluster_slots(self, node: str) -> dict:
        self.slots_calls += 1
        await asyncio.sleep(random.uniform(0.0003, 0.0015))  # CLUSTER SLOTS round trip
        return {"0-8191": "node-a", "8192-16383": "node-b"}

    async def ping(self, node: str) -> None:
        await asyncio.sleep(random.uniform(0.0003, 0.0015))

    async def command(self, node: str, *args):
        await asyncio.sleep(random.uniform(0, 0.0005))
        if args[0] == "SET":
            self.data[args[1]] = args[2]
            return True
        return self.data.get(args[1])


class NodeManager:
    def __init__(self, cluster: FakeCluster, startup_nodes: list) -> None:
        self._cluster = cluster
        self.startup_nodes = startup_nodes
        self.startup_nodes_reachable = False
        self.slots: dict = {}

    async def initialize(self) -> None:
        self.startup_nodes_reachable = False
        slots: dict = {}
        for node in self.startup_nodes:
            try:
                slots = await self._cluster.cluster_slots(node)
            except ConnectionError:
                continue
            self.startup_nodes_reachable = True
            break
        for node in set(slots.values()):
            await self._cluster.ping(node)  # connect to every node of the slot map
        if not self.startup_nodes_reachable:
            raise ClusterUnreachable("Redis Cluster cannot be connected. "
                                     "Please provide at least one reachable node.")
        self.slots = slots


class ClusterConnectionPool:
    def __init__(self, cluster: FakeCluster, startup_nodes: list) -> None:
        self.nodes = NodeManager(cluster, startup_nodes)
        self.initialized = False
        self._init_lock = asyncio.Lock()

    async def initialize(self) -> None:
        if self.initialized:
            return
        # One initialisation at a time; a command that waited finds the pool initialised.
        async with self._init_lock:
            if not self.initialized:
                await self.nodes.initialize()
                self.initialized = True

    async def node_for(self, key: str) -> str:
        await self.initialize()
        return self.nodes.slots["0-8191" if hash(key) % 2 else "8192-16383"]


class RedisCluster:
    def __init__(self, cluster: FakeCluster, startup_nodes: list) -> None:
        self._cluster = cluster
        self.connection_pool = ClusterConnectionPool(cluster, startup_nodes)

    async def set(self, key: str, value) -> bool:
        node = await self.connection_pool.node_for(key)
        return await self._cluster.command(node, "SET", key, value)

    async def get(self, key: str):
        node = await self.connection_pool.node_for(key)
        return await self._cluster.command(node, "GET", key)
