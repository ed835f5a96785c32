import asyncio

import pytest

pytestmark = pytest.mark.asyncio


async def test_publish_without_subscribers(client, ns):
    assert (await client.post_json(f"/publish/{ns}", {"a": 1})).data() == {"delivered": 0}


async def test_long_poll_receives_messages(client, make_client, service, ns):
    poller = asyncio.create_task(make_client().get(f"/events/{ns}.*?n=2&timeout=20"))
    await asyncio.wait_for(service.broker.wait_for_subscribers(f"{ns}.x", 1), 20)
    for i in range(2):
        assert (await client.post_json(f"/publish/{ns}.x", {"i": i})).data() == {"delivered": 1}
    data = (await asyncio.wait_for(poller, 20)).data()
    assert data == {"complete": True, "events": [{"topic": f"{ns}.x", "message": {"i": 0}},
                                                 {"topic": f"{ns}.x", "message": {"i": 1}}]}
    assert service.broker.subscriber_count(f"{ns}.x") == 0


async def test_two_pollers_both_receive(client, make_client, service, ns):
    pollers = [asyncio.create_task(make_client().get(f"/events/{ns}?n=1&timeout=20")) for _ in range(2)]
    await asyncio.wait_for(service.broker.wait_for_subscribers(ns, 2), 20)
    assert (await client.post_json(f"/publish/{ns}", "hello")).data() == {"delivered": 2}
    for resp in await asyncio.wait_for(asyncio.gather(*pollers), 20):
        assert resp.data()["events"] == [{"topic": ns, "message": "hello"}]


async def test_long_poll_timeout_is_not_early(client, ns):
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    resp = await client.get(f"/events/{ns}?n=1&timeout=0.2")
    assert resp.data() == {"complete": False, "events": []}
    assert 0.19 <= loop.time() - t0 < 10


async def test_partial_long_poll(client, make_client, service, ns):
    poller = asyncio.create_task(make_client().get(f"/events/{ns}?n=3&timeout=0.3"))
    await asyncio.wait_for(service.broker.wait_for_subscribers(ns, 1), 20)
    await client.post_json(f"/publish/{ns}", 1)
    data = (await asyncio.wait_for(poller, 20)).data()
    assert data == {"complete": False, "events": [{"topic": ns, "message": 1}]}
