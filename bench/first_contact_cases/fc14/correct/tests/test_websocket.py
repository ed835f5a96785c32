import asyncio

import pytest
import pytest_asyncio

import wire
from wire import ConnectionClosed
from wire.ws import State, WsConnection, WsServerHandler, echo_app

from conftest import EPS


@pytest_asyncio.fixture
async def ws_server():
    handler = WsServerHandler(echo_app)
    server = await wire.serve_tcp(handler, name="ws-echo")
    yield server, handler
    await server.close()


@pytest_asyncio.fixture
async def ws_client(ws_server):
    server, _ = ws_server
    conn = await WsConnection.connect("127.0.0.1", server.port)
    yield conn
    await conn.close()


async def silent_peer(reader, writer):
    """Reads and discards everything: never answers a ping."""
    while await reader.read(65536):
        pass


@pytest.mark.asyncio
async def test_text_and_binary_roundtrip(ws_client):
    await ws_client.send("héllo")
    assert await asyncio.wait_for(ws_client.recv(), 20) == "héllo"
    await ws_client.send(b"\x00\x01\xff")
    assert await asyncio.wait_for(ws_client.recv(), 20) == b"\x00\x01\xff"


@pytest.mark.asyncio
async def test_messages_keep_their_order(ws_client):
    for i in range(50):
        await ws_client.send(f"m{i}")
    got = [await asyncio.wait_for(ws_client.recv(), 20) for _ in range(50)]
    assert got == [f"m{i}" for i in range(50)]


@pytest.mark.asyncio
async def test_ping_round_trip(ws_client):
    rtt = await asyncio.wait_for(ws_client.ping(b"abcd"), 20)
    assert 0 <= rtt < 20
    assert await asyncio.wait_for(ws_client.ping(), 20) >= 0


@pytest.mark.asyncio
async def test_server_side_ping_is_answered(ws_server, ws_client):
    server, handler = ws_server
    await ws_client.send("hi")
    assert await asyncio.wait_for(ws_client.recv(), 20) == "hi"
    server_conn = handler.connections[0]
    await asyncio.wait_for(server_conn.ping(b"srv1"), 20)
    assert ws_client.pongs_sent == 1 and ws_client.pings_received == 1


@pytest.mark.asyncio
async def test_client_initiated_close_handshake(ws_server):
    server, handler = ws_server
    conn = await WsConnection.connect("127.0.0.1", server.port)
    await conn.send("bye soon")
    assert await asyncio.wait_for(conn.recv(), 20) == "bye soon"
    await asyncio.wait_for(conn.close(1000, "done"), 20)
    assert conn.state is State.CLOSED and conn.close_code == 1000
    server_conn = handler.connections[0]
    assert await asyncio.wait_for(server_conn.wait_closed(), 20) == 1000
    assert server_conn.close_reason == "done"


@pytest.mark.asyncio
async def test_server_initiated_close_reaches_the_client(ws_client):
    await ws_client.send("close-me")
    with pytest.raises(ConnectionClosed) as info:
        await asyncio.wait_for(ws_client.recv(), 20)
    assert info.value.code == 4000 and info.value.reason == "asked to"
    assert await asyncio.wait_for(ws_client.wait_closed(), 20) == 4000


@pytest.mark.asyncio
async def test_send_after_close_raises(ws_client):
    await asyncio.wait_for(ws_client.close(), 20)
    with pytest.raises(ConnectionClosed):
        await ws_client.send("too late")
    with pytest.raises(ConnectionClosed):
        await ws_client.ping()


@pytest.mark.asyncio
async def test_messages_sent_before_close_are_still_received(ws_client):
    await ws_client.send("one")
    await ws_client.send("two")
    await ws_client.send("close-me")
    assert await asyncio.wait_for(ws_client.recv(), 20) == "one"
    assert await asyncio.wait_for(ws_client.recv(), 20) == "two"
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(ws_client.recv(), 20)


@pytest.mark.asyncio
async def test_keepalive_keeps_an_idle_connection_open(ws_server):
    server, _ = ws_server
    conn = await WsConnection.connect("127.0.0.1", server.port, ping_interval=0.02, ping_timeout=20)
    try:
        async def until_pings(n):
            while conn.keepalive_pings < n:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(until_pings(3), 20)
        assert conn.state is State.OPEN
        await conn.send("alive")
        assert await asyncio.wait_for(conn.recv(), 20) == "alive"
    finally:
        await conn.close()
    assert conn.close_code == 1000


@pytest.mark.asyncio
async def test_keepalive_detects_an_unresponsive_peer():
    async with await wire.serve_tcp(silent_peer, name="silent-ws") as server:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        conn = await WsConnection.connect("127.0.0.1", server.port, ping_interval=0.02, ping_timeout=0.05)
        try:
            assert await asyncio.wait_for(conn.wait_closed(), 20) == 1011
            assert loop.time() - t0 >= 0.02 + 0.05 - EPS
            assert conn.close_reason == "keepalive ping timeout"
            with pytest.raises(ConnectionClosed):
                await conn.recv()
        finally:
            await conn.close()


@pytest.mark.asyncio
async def test_abrupt_disconnect_gives_1006():
    async def drop(reader, writer):
        await reader.read(1)  # wait for the client's first byte, then vanish
        writer.transport.abort()

    async with await wire.serve_tcp(drop, name="dropper") as server:
        conn = await WsConnection.connect("127.0.0.1", server.port)
        try:
            await conn.send("anything")
            with pytest.raises(ConnectionClosed) as info:
                await asyncio.wait_for(conn.recv(), 20)
            assert info.value.code == 1006
        finally:
            await conn.close()


@pytest.mark.asyncio
async def test_pending_ping_fails_when_the_connection_drops():
    got_ping = asyncio.Event()

    async def hang_up_on_ping(reader, writer):
        await reader.readexactly(5)  # the ping frame header
        got_ping.set()
        writer.close()

    async with await wire.serve_tcp(hang_up_on_ping, name="hangup") as server:
        conn = await WsConnection.connect("127.0.0.1", server.port)
        try:
            ping = asyncio.create_task(conn.ping(b"xxxx"))
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ping, 20)
            assert got_ping.is_set()
        finally:
            await conn.close()
