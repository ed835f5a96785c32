import asyncio

import pytest

from app.client import Client, ConnectionPool

pytestmark = pytest.mark.asyncio


def started_paths(svc):
    q = asyncio.Queue()
    svc.server.request_started = lambda req: q.put_nowait(req.path)
    return q


async def test_stop_lets_busy_requests_finish(own_service, make_client):
    svc = await own_service()
    started = started_paths(svc)
    c = make_client(port=svc.port)
    slow = asyncio.create_task(c.get("/slow?s=0.3"))
    assert await asyncio.wait_for(started.get(), 20) == "/slow?s=0.3"
    await asyncio.wait_for(svc.stop(), 20)
    resp = await asyncio.wait_for(slow, 20)
    assert resp.status == 200 and resp.headers["connection"] == "close"


async def test_idle_keepalive_connections_are_closed(own_service, make_client):
    svc = await own_service()
    c = make_client(port=svc.port, max_size=3)
    await asyncio.gather(*(c.get("/slow?s=0.05") for _ in range(3)))
    assert svc.server.connections == c.pool.created
    await asyncio.wait_for(svc.stop(), 20)
    assert svc.server.connections == 0
    for conn in list(c.pool._idle):
        assert await asyncio.wait_for(conn.reader.read(), 20) == b""


async def test_grace_period_cancels_stragglers(own_service):
    svc = await own_service(grace=0.1)
    started = started_paths(svc)
    pool = ConnectionPool("127.0.0.1", svc.port)
    try:
        hung = asyncio.create_task(Client(pool).get("/slow?s=30"))
        await asyncio.wait_for(started.get(), 20)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await asyncio.wait_for(svc.stop(), 20)
        assert 0.1 - 0.01 <= loop.time() - t0 < 10
        with pytest.raises((ConnectionError, asyncio.IncompleteReadError)):
            await asyncio.wait_for(hung, 20)
    finally:
        await pool.close()


async def test_no_new_connections_after_stop(own_service):
    svc = await own_service()
    await svc.stop()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", svc.port)


async def test_data_survives_a_restart(own_service, tmp_path):
    path = tmp_path / "restart.log"
    first = await own_service(path=path)
    pool = ConnectionPool("127.0.0.1", first.port)
    await Client(pool).put_json("/kv/config", {"mode": "blue"})
    await pool.close()
    await first.stop()
    second = await own_service(path=path)
    pool = ConnectionPool("127.0.0.1", second.port)
    try:
        assert (await Client(pool).get("/kv/config")).data()["value"] == {"mode": "blue"}
    finally:
        await pool.close()
