"""The first two commands of a fresh cluster client both succeed, with one initialisation."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "check_then_act",
    "resource": ["ClusterConnectionPool#0.initialized", ".startup_nodes_reachable"],
    "await": "t_cluster_init_race_buggy.py:69",
    "fix": "RECHECK",
    "tags": ["lazy_init"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"t_cluster_init_race_{request.param}")


@pytest.mark.asyncio
async def test_first_commands_after_start(lib):
    cluster = lib.FakeCluster()
    client = lib.RedisCluster(cluster, ["node-a:7000", "node-b:7001"])

    async def write():
        await asyncio.sleep(random.uniform(0, 0.04))
        return await client.set("user:1", "ada")

    async def read():
        await asyncio.sleep(random.uniform(0, 0.04))
        return await client.get("user:2")

    assert await asyncio.gather(write(), read()) == [True, None]
    assert cluster.slots_calls == 1
