import asyncio
import time

import pytest
import pytest_asyncio

import wire
from wire import ConnectionClosed, RemoteError
from wire.rpc import RpcClient, RpcServerHandler

from conftest import EPS


@pytest_asyncio.fixture
async def client(rpc_server):
    c = await RpcClient.connect("127.0.0.1", rpc_server.port)
    yield c
    await c.close()


@pytest.mark.asyncio
async def test_echo_and_add(client):
    assert await client.call("echo", {"k": [1, 2]}) == {"k": [1, 2]}
    assert await client.call("add", 2, 40) == 42


@pytest.mark.asyncio
async def test_remote_error_carries_kind_and_message(client):
    with pytest.raises(RemoteError) as info:
        await client.call("fail", "boom")
    assert (info.value.kind, info.value.message) == ("ValueError", "boom")
    with pytest.raises(RemoteError) as info:
        await client.call("nope")
    assert info.value.kind == "NoSuchMethod"
    assert await client.call("echo", 1) == 1  # the connection survives errors


@pytest.mark.asyncio
async def test_pipelined_replies_are_matched_by_id(client):
    results = await asyncio.wait_for(asyncio.gather(
        client.call("sleep", 0.2, "slow"),
        client.call("sleep", 0.01, "fast"),
        client.call("echo", "now"),
    ), 20)
    assert results == ["slow", "fast", "now"]
    assert client.pending == 0


@pytest.mark.asyncio
async def test_many_concurrent_calls(client, rpc_handler):
    results = await asyncio.wait_for(
        asyncio.gather(*(client.call("add", i, i) for i in range(25))), 20)
    assert results == [2 * i for i in range(25)]
    assert rpc_handler.handled == 25


@pytest.mark.asyncio
async def test_per_request_timeout_lower_bound_and_connection_survives(client):
    t0 = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await client.call("sleep", 30, "never", timeout=0.05)
    assert time.monotonic() - t0 >= 0.05 - EPS
    assert client.pending == 0
    assert await asyncio.wait_for(client.call("echo", "still here"), 20) == "still here"


@pytest.mark.asyncio
async def test_late_reply_after_timeout_is_dropped(client):
    with pytest.raises(asyncio.TimeoutError):
        await client.call("sleep", 0.05, "late", timeout=0.01)

    async def until_late():
        while client.late_replies < 1:
            await asyncio.sleep(0.005)

    await asyncio.wait_for(until_late(), 20)
    assert client.late_replies == 1
    assert await client.call("echo", "next") == "next"


@pytest.mark.asyncio
async def test_default_timeout_applies():
    entered = asyncio.Event()

    async def hang():
        entered.set()
        await asyncio.sleep(3600)

    async with await wire.serve_tcp(RpcServerHandler({"hang": hang}), name="rpc-hang") as server:
        async with await RpcClient.connect("127.0.0.1", server.port, default_timeout=0.03) as c:
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            with pytest.raises(asyncio.TimeoutError):
                await c.call("hang")
            assert loop.time() - t0 >= 0.03 - EPS


@pytest.mark.asyncio
async def test_server_shutdown_fails_pending_calls():
    entered = asyncio.Event()

    async def block():
        entered.set()
        await asyncio.sleep(3600)

    server = await wire.serve_tcp(RpcServerHandler({"block": block}), name="rpc-block")
    try:
        async with await RpcClient.connect("127.0.0.1", server.port) as c:
            call = asyncio.create_task(c.call("block"))
            await asyncio.wait_for(entered.wait(), 20)
            await server.close(grace=0)
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(call, 20)
            with pytest.raises(ConnectionClosed):
                await c.call("block")
    finally:
        await server.close()


@pytest.mark.asyncio
async def test_call_after_close_raises(rpc_server):
    c = await RpcClient.connect("127.0.0.1", rpc_server.port)
    await c.close()
    with pytest.raises(ConnectionClosed):
        await c.call("echo", 1)


@pytest.mark.asyncio
async def test_close_fails_a_call_in_flight(rpc_server):
    c = await RpcClient.connect("127.0.0.1", rpc_server.port)
    call = asyncio.create_task(c.call("sleep", 30))
    await asyncio.sleep(0)  # let the call write its request
    await c.close()
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(call, 20)


@pytest.mark.asyncio(loop_scope="module")
class TestSharedServer:
    """Several tests against one module-scoped server on the module loop."""

    async def test_same_loop_as_the_server(self, shared_rpc):
        server, _ = shared_rpc
        assert server.sockets and not server.closed
        async with await RpcClient.connect("127.0.0.1", server.port) as c:
            assert await c.call("echo", "shared") == "shared"

    async def test_counts_are_relative(self, shared_rpc):
        server, handler = shared_rpc
        before = handler.handled
        async with await RpcClient.connect("127.0.0.1", server.port) as c:
            await asyncio.gather(*(c.call("add", i, 1) for i in range(5)))
        assert handler.handled - before == 5

    async def test_two_clients_interleave(self, shared_rpc):
        server, _ = shared_rpc
        async with await RpcClient.connect("127.0.0.1", server.port) as a, \
                await RpcClient.connect("127.0.0.1", server.port) as b:
            ra, rb = await asyncio.gather(
                asyncio.gather(*(a.call("echo", f"a{i}") for i in range(5))),
                asyncio.gather(*(b.call("echo", f"b{i}") for i in range(5))),
            )
        assert ra == [f"a{i}" for i in range(5)]
        assert rb == [f"b{i}" for i in range(5)]
