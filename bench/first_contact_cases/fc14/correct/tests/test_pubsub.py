import asyncio

import pytest
import pytest_asyncio

import wire
from wire.pubsub import Broker, PubSubClient


@pytest_asyncio.fixture
async def broker():
    b = Broker()
    server = await wire.serve_tcp(b, name="broker")
    clients = []

    async def connect():
        c = await PubSubClient.connect("127.0.0.1", server.port)
        clients.append(c)
        return c

    yield b, connect
    for c in clients:
        await c.close()
    await server.close()


async def wait_until(predicate, timeout=20):
    async def _poll():
        while not predicate():
            await asyncio.sleep(0.005)
    await asyncio.wait_for(_poll(), timeout)


@pytest.mark.asyncio
async def test_single_subscriber(broker):
    b, connect = broker
    sub, pub = await connect(), await connect()
    await sub.subscribe("news")
    assert await pub.publish("news", "hello world") == 1
    assert await sub.next_message() == ("news", "hello world")


@pytest.mark.asyncio
async def test_broadcast_to_three_subscribers(broker):
    b, connect = broker
    subs = [await connect() for _ in range(3)]
    for s in subs:
        await s.subscribe("t")
    pub = await connect()
    assert await pub.publish("t", "fan-out") == 3
    got = await asyncio.gather(*(s.next_message() for s in subs))
    assert got == [("t", "fan-out")] * 3
    assert b.delivered == 3


@pytest.mark.asyncio
async def test_one_publishers_messages_arrive_in_order(broker):
    b, connect = broker
    s1, s2, pub = await connect(), await connect(), await connect()
    await s1.subscribe("seq")
    await s2.subscribe("seq")
    for i in range(20):
        await pub.publish("seq", str(i))
    for s in (s1, s2):
        got = [int((await s.next_message())[1]) for _ in range(20)]
        assert got == list(range(20))


@pytest.mark.asyncio
async def test_two_publishers_keep_their_own_order(broker):
    b, connect = broker
    sub, p1, p2 = await connect(), await connect(), await connect()
    await sub.subscribe("mix")

    async def run(pub, tag):
        for i in range(15):
            await pub.publish("mix", f"{tag}{i}")

    await asyncio.wait_for(asyncio.gather(run(p1, "a"), run(p2, "b")), 20)
    got = [(await sub.next_message())[1] for _ in range(30)]
    # no order is promised between publishers; each publisher's own messages stay ordered
    assert [m for m in got if m[0] == "a"] == [f"a{i}" for i in range(15)]
    assert [m for m in got if m[0] == "b"] == [f"b{i}" for i in range(15)]


@pytest.mark.asyncio
async def test_topics_are_isolated(broker):
    b, connect = broker
    sub, pub = await connect(), await connect()
    await sub.subscribe("a")
    assert await pub.publish("b", "not for you") == 0
    assert await pub.publish("a", "for you") == 1
    # the broker handles one publisher's commands in order, so anything for "b" would come first
    assert await sub.next_message() == ("a", "for you")


@pytest.mark.asyncio
async def test_unsubscribe(broker):
    b, connect = broker
    sub, pub = await connect(), await connect()
    await sub.subscribe("x")
    assert await pub.publish("x", "1") == 1
    await sub.unsubscribe("x")
    assert await pub.publish("x", "2") == 0
    await sub.subscribe("y")
    assert await pub.publish("y", "3") == 1
    assert [await sub.next_message() for _ in range(2)] == [("x", "1"), ("y", "3")]


@pytest.mark.asyncio
async def test_disconnected_subscriber_is_forgotten(broker):
    b, connect = broker
    sub, pub = await connect(), await connect()
    await sub.subscribe("gone")
    assert b.subscribers("gone") == 1
    await sub.close()
    await wait_until(lambda: b.subscribers("gone") == 0)
    assert await pub.publish("gone", "anyone?") == 0


@pytest.mark.asyncio
async def test_publisher_receives_its_own_message(broker):
    b, connect = broker
    me = await connect()
    await me.subscribe("self")
    assert await me.publish("self", "echo") == 1
    assert await me.next_message() == ("self", "echo")
