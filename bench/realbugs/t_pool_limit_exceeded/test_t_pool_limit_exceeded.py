"""Workers sharing a pool limited to two connections never hold more than two open."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "check_then_act",
    "resource": ["ConnectionPool#0.occupied", "ConnectionPool#0.available", "._n_connecting"],
    "await": "t_pool_limit_exceeded_buggy.py:63",
    "fix": "LOCK_CALLER",
    "tags": ["check_then_act_across_functions"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"t_pool_limit_exceeded_{request.param}")


async def send_data(pool, addr):
    await asyncio.sleep(random.uniform(0, 0.02))  # the worker's task becomes ready
    comm = await pool.connect(addr)
    await asyncio.sleep(random.uniform(0, 0.001))  # the message is written
    pool.reuse(addr, comm)


@pytest.mark.asyncio
async def test_connection_pool_respects_limit(lib):
    connector = lib.FakeConnector()
    pool = lib.ConnectionPool(connector, limit=2)
    await asyncio.gather(*(send_data(pool, "tcp://scheduler:8786") for _ in range(4)))
    pool.close()
    assert connector.max_live <= 2
    assert connector.live == 0
