"""A small request/response service and client on anyio's networking API, asyncio backend.

Libraries built on anyio test themselves like this (httpcore's anyio backend,
asgi-lifespan, Starlette's TestClient).  A line-protocol service is served by
``create_tcp_listener(...).serve`` in a task group that the fixture holds
across ``yield``.  One connection is reused across ``anyio.sleep`` calls.
Deadlines use ``fail_after`` and ``move_on_after``.  The same service is also
reached over a Unix listener, and a UDP echo runs over ``create_udp_socket``.
"""

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


class LineService:
    def __init__(self):
        self.connections = 0
        self.finished = 0
        self.commands = []

    async def handle(self, stream):
        self.connections += 1
        buffered = BufferedByteReceiveStream(stream)
        async with stream:
            while True:
                try:
                    line = await buffered.receive_until(b"\n", 65536)
                except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                    self.finished += 1
                    return
                cmd, _, arg = line.decode().partition(" ")
                self.commands.append(cmd)
                if cmd == "ECHO":
                    await stream.send(arg.encode() + b"\n")
                elif cmd == "WAIT":
                    await anyio.sleep(float(arg))
                    await stream.send(b"WAITED\n")
                elif cmd == "HANG":
                    await anyio.sleep_forever()
                else:
                    await stream.send(b"ERR\n")


class LineClient:
    def __init__(self, stream):
        self.stream = stream
        self.buffered = BufferedByteReceiveStream(stream)

    async def call(self, command):
        await self.stream.send(command.encode() + b"\n")
        return (await self.buffered.receive_until(b"\n", 65536)).decode()

    async def aclose(self):
        await self.stream.aclose()


@pytest.fixture
async def service():
    svc = LineService()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    svc.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, svc.handle)
        yield svc
        tg.cancel_scope.cancel()
    await listener.aclose()


@pytest.fixture
async def client(service):
    c = LineClient(await anyio.connect_tcp("127.0.0.1", service.port))
    yield c
    await c.aclose()


async def test_connection_reused_across_sleeps(service, client):
    with anyio.fail_after(10):
        assert await client.call("ECHO one") == "one"
    await anyio.sleep(0.5)
    with anyio.fail_after(10):
        assert await client.call("ECHO two") == "two"
    await anyio.sleep(0.5)
    with anyio.fail_after(10):
        assert await client.call("ECHO three") == "three"
    assert service.connections == 1


async def test_server_side_wait_is_a_lower_bound(client):
    started = anyio.current_time()
    with anyio.fail_after(10):
        assert await client.call("WAIT 0.3") == "WAITED"
    assert anyio.current_time() - started >= 0.3 - 0.01


async def test_move_on_after_abandons_a_hung_request(service):
    stream = await anyio.connect_tcp("127.0.0.1", service.port)
    c = LineClient(stream)
    try:
        started = anyio.current_time()
        with anyio.move_on_after(0.3) as scope:
            await c.call("HANG")
        assert scope.cancelled_caught
        assert anyio.current_time() - started >= 0.3 - 0.01
    finally:
        await c.aclose()
    # The hung connection is abandoned; a fresh one still works.
    fresh = LineClient(await anyio.connect_tcp("127.0.0.1", service.port))
    try:
        with anyio.fail_after(10):
            assert await fresh.call("ECHO alive") == "alive"
    finally:
        await fresh.aclose()


async def test_parallel_clients_in_a_task_group(service):
    results = {}

    async def worker(n):
        c = LineClient(await anyio.connect_tcp("127.0.0.1", service.port))
        try:
            results[n] = await c.call(f"ECHO w{n}")
            await anyio.sleep(0.5)
            results[n] += "+" + await c.call(f"ECHO w{n}-again")
        finally:
            await c.aclose()

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            for n in range(6):
                tg.start_soon(worker, n)
    assert results == {n: f"w{n}+w{n}-again" for n in range(6)}
    assert service.connections == 6


async def test_same_service_over_a_unix_listener(tmp_path):
    svc = LineService()
    path = tmp_path / "svc.sock"
    listener = await anyio.create_unix_listener(path)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, svc.handle)
            c = LineClient(await anyio.connect_unix(path))
            try:
                with anyio.fail_after(10):
                    assert await c.call("ECHO over unix") == "over unix"
            finally:
                await c.aclose()
            # Let the handler see EOF and return before the listener is cancelled.
            with anyio.fail_after(10):
                while svc.finished < 1:
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
    finally:
        await listener.aclose()
    assert svc.commands == ["ECHO"]


async def test_udp_echo_with_anyio_sockets():
    async with await anyio.create_udp_socket(local_host="127.0.0.1") as server:
        port = server.extra(anyio.abc.SocketAttribute.local_port)

        async def echo_once():
            data, addr = await server.receive()
            await server.sendto(data.upper(), *addr)

        async with await anyio.create_connected_udp_socket("127.0.0.1", port) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(echo_once)
                await client.send(b"ping")
                with anyio.fail_after(10):
                    assert await client.receive() == b"PING"
