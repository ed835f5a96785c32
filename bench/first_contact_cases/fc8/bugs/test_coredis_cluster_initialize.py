"""Model of coredis' cluster node manager being initialised by two coroutines
at once.

Report: https://github.com/alisaifee/coredis/issues/106
("Potential race condition in nodemanager's initialize()").

Paraphrase of the report: in a fresh process, the first two coroutines that use
the cluster client both find it uninitialised and both enter ``initialize()``.
Initialisation starts by clearing a "startup nodes reachable" flag, sets it
once a startup node answers, and at the end raises "Redis Cluster cannot be
connected. Please provide at least one reachable node." if the flag is unset.
When the second coroutine enters while the first is still waiting on the
network, it clears the flag the first one had already set, and the first
coroutine then fails even though the cluster is perfectly reachable.  The
maintainer also noted that several coroutines can end up sending the slot
discovery command concurrently.

In the test, a request triggers lazy initialisation at t=0 (connect ~2 ms, slot
discovery ~5 ms) and a health check arrives at t=50 ms; normally initialisation
is long finished by then.  If the first coroutine's round trips take longer
than that, the health check re-enters ``initialize()``, clears the flag, and
the first coroutine raises ``ClusterError``.
"""

import asyncio

import pytest

EXPECTED = {"cause": "check_then_act", "resource": "NodeManager.startup_nodes_reachable / initialized"}

CONNECT_LATENCY = 0.002
SLOTS_LATENCY = 0.005
HEALTH_CHECK_AT = 0.05


class ClusterError(Exception):
    pass


class NodeManager:
    def __init__(self, startup_nodes: list[str]) -> None:
        self.startup_nodes = startup_nodes
        self.initialized = False
        self.startup_nodes_reachable = False
        self.slots: dict[int, str] = {}
        self.slot_discoveries = 0

    async def _connect(self, node: str) -> None:
        await asyncio.sleep(CONNECT_LATENCY)

    async def _cluster_slots(self, node: str) -> dict[int, str]:
        self.slot_discoveries += 1
        await asyncio.sleep(SLOTS_LATENCY)
        return {0: "10.0.0.1:7000", 1: "10.0.0.2:7000", 2: "10.0.0.3:7000"}

    async def initialize(self) -> None:
        self.startup_nodes_reachable = False
        for node in self.startup_nodes:
            try:
                await self._connect(node)
            except ConnectionError:
                continue
            self.startup_nodes_reachable = True
            self.slots.update(await self._cluster_slots(node))
            break
        if not self.startup_nodes_reachable:
            raise ClusterError(
                "Redis Cluster cannot be connected. Please provide at least one reachable node."
            )
        self.initialized = True


class RedisCluster:
    def __init__(self, startup_nodes: list[str]) -> None:
        self.nodes = NodeManager(startup_nodes)

    async def execute(self, command: str, key: str) -> str:
        if not self.nodes.initialized:  # BUG: unguarded lazy initialisation
            await self.nodes.initialize()
        node = self.nodes.slots[sum(key.encode()) % 3]
        await asyncio.sleep(0.001)
        return f"{command} {key} @ {node}"


@pytest.mark.asyncio
async def test_concurrent_first_use_initialises_cleanly():
    cluster = RedisCluster(["10.0.0.1:7000", "10.0.0.2:7000"])

    async def request():
        return await cluster.execute("GET", "user:1")

    async def health_check():
        await asyncio.sleep(HEALTH_CHECK_AT)
        return await cluster.execute("PING", "x")

    first, second = await asyncio.wait_for(asyncio.gather(request(), health_check()), timeout=10)
    assert first.startswith("GET user:1 @ ")
    assert second.startswith("PING x @ ")
    assert cluster.nodes.initialized
    assert cluster.nodes.slot_discoveries == 1
