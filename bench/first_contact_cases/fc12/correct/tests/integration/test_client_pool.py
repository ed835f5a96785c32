import asyncio

import pytest

from app.client import PoolClosed

pytestmark = pytest.mark.asyncio


async def test_sequential_requests_reuse_one_connection(make_client):
    c = make_client(max_size=4)
    for _ in range(5):
        assert (await c.get("/health")).status == 200
    assert (c.pool.created, c.pool.reused, c.pool.idle) == (1, 4, 1)


async def test_concurrency_is_bounded_by_pool_size(make_client):
    c = make_client(max_size=2)
    results = await asyncio.wait_for(asyncio.gather(*(c.get("/slow?s=0.02") for _ in range(8))), 20)
    assert [r.status for r in results] == [200] * 8
    assert c.pool.created <= 2 and c.pool.in_use == 0


async def test_cancelled_request_discards_its_connection(make_client, request_started):
    c = make_client(max_size=1)
    assert (await c.get("/health")).status == 200
    slow = asyncio.create_task(c.get("/slow?s=3"))
    assert await asyncio.wait_for(request_started.get(), 20) == "/health"
    assert await asyncio.wait_for(request_started.get(), 20) == "/slow?s=3"
    slow.cancel()
    with pytest.raises(asyncio.CancelledError):
        await slow
    assert (c.pool.in_use, c.pool.idle) == (0, 0)
    assert (await c.get("/health")).status == 200
    assert c.pool.created == 2


async def test_connection_close_is_honoured(make_client):
    c = make_client()
    resp = await c.get("/health", headers={"connection": "close"})
    assert resp.headers["connection"] == "close"
    assert c.pool.idle == 0
    await c.get("/health")
    assert c.pool.created == 2


async def test_many_clients_many_keys(make_client, ns):
    clients = [make_client(max_size=2) for _ in range(4)]

    async def work(i):
        c = clients[i % 4]
        await c.put_json(f"/kv/{ns}-{i}", i)
        return (await c.get(f"/kv/{ns}-{i}")).data()["value"]

    assert await asyncio.wait_for(asyncio.gather(*(work(i) for i in range(20))), 20) == list(range(20))


async def test_closed_pool_refuses(make_client):
    c = make_client()
    await c.get("/health")
    await c.pool.close()
    with pytest.raises(PoolClosed):
        await c.get("/health")


async def test_server_sees_the_pool_close(make_client, service):
    c = make_client(max_size=3)
    await asyncio.gather(*(c.get("/slow?s=0.05") for _ in range(3)))
    assert c.pool.idle == c.pool.created
    before = service.server.connections
    await c.pool.close()
    async with asyncio.timeout(20):
        while service.server.connections > before - c.pool.created:
            await asyncio.sleep(0.01)
