"""Protocol-level tests: write-buffer limits, pause/resume, half-close, BufferedProtocol."""
import asyncio
import socket

import pytest
import pytest_asyncio

from wire import ConnectionClosed
from wire.flow import (BufferedEchoProtocol, CountingSinkProtocol, FlowControlledProtocol,
                       ServerFactory)

PAYLOAD = b"x" * (1 << 20)
HIGH, LOW = 16 * 1024, 4 * 1024


class PausedSink(CountingSinkProtocol):
    def connection_made(self, transport):
        super().connection_made(transport)
        self.pause()


def small_buffer_listener() -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    return sock


async def small_buffer_client(port: int, **proto_kwargs):
    loop = asyncio.get_running_loop()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    sock.setblocking(False)
    try:
        await loop.sock_connect(sock, ("127.0.0.1", port))
    except BaseException:
        sock.close()
        raise
    return await loop.create_connection(lambda: FlowControlledProtocol(**proto_kwargs), sock=sock)


@pytest_asyncio.fixture
async def sink_server():
    servers = []

    async def _start(cls=CountingSinkProtocol):
        factory = ServerFactory(cls)
        server = await asyncio.get_running_loop().create_server(factory, sock=small_buffer_listener())
        servers.append((server, factory))
        return server, factory

    yield _start
    for server, factory in servers:
        server.close()
        await server.wait_closed()
        for proto in factory.protocols:  # 3.11: server.close() leaves accepted transports open
            proto.transport.close()
            await asyncio.wait_for(proto.lost, 20)


@pytest_asyncio.fixture
async def transports():
    opened = []
    yield opened
    for transport, proto in opened:
        transport.close()
        await asyncio.wait_for(proto.lost, 20)


def port_of(server) -> int:
    return server.sockets[0].getsockname()[1]


@pytest.mark.asyncio
async def test_buffer_limits_are_applied(sink_server, transports):
    server, _ = await sink_server()
    transport, proto = await small_buffer_client(port_of(server), high=HIGH, low=LOW)
    transports.append((transport, proto))
    assert transport.get_write_buffer_limits() == (LOW, HIGH)
    assert transport.can_write_eof()


@pytest.mark.asyncio
async def test_big_write_pauses_writing_synchronously(sink_server, transports):
    server, factory = await sink_server()
    transport, proto = await small_buffer_client(port_of(server), high=HIGH, low=LOW)
    transports.append((transport, proto))
    proto.write(PAYLOAD)
    # the kernel took at most a few small socket buffers; the rest is above the high-water mark
    assert proto.paused and proto.pause_count == 1
    assert transport.get_write_buffer_size() > HIGH
    await asyncio.wait_for(proto.drain(), 20)
    assert not proto.paused and proto.resume_count == 1
    assert transport.get_write_buffer_size() <= LOW


@pytest.mark.asyncio
async def test_drain_waits_for_the_reader_to_resume(sink_server, transports):
    server, factory = await sink_server(PausedSink)
    transport, proto = await small_buffer_client(port_of(server), high=HIGH, low=LOW)
    transports.append((transport, proto))
    await asyncio.wait_for(factory.connected.wait(), 20)
    sink = factory.protocols[0]
    await asyncio.wait_for(sink.made, 20)
    assert sink.reading_paused
    proto.write(PAYLOAD)
    drain = asyncio.create_task(proto.drain())
    done, _ = await asyncio.wait([drain], timeout=0.05)
    assert not done  # the server reads nothing, so the buffer cannot fall below the low-water mark
    sink.resume()
    await asyncio.wait_for(drain, 20)
    assert proto.resume_count >= 1


@pytest.mark.asyncio
async def test_several_tasks_can_wait_in_drain(sink_server, transports):
    server, factory = await sink_server(PausedSink)
    transport, proto = await small_buffer_client(port_of(server), high=HIGH, low=LOW)
    transports.append((transport, proto))
    await asyncio.wait_for(factory.connected.wait(), 20)
    sink = factory.protocols[0]
    await asyncio.wait_for(sink.made, 20)

    async def writer(i):
        proto.write(bytes([i]) * (256 * 1024))
        await proto.drain()
        return i

    tasks = [asyncio.create_task(writer(i)) for i in range(3)]
    await asyncio.sleep(0)
    sink.resume()
    assert sorted(await asyncio.wait_for(asyncio.gather(*tasks), 20)) == [0, 1, 2]


@pytest.mark.asyncio
async def test_half_close_gets_the_total_back(sink_server, transports):
    server, factory = await sink_server()
    transport, proto = await small_buffer_client(port_of(server), high=HIGH, low=LOW)
    transports.append((transport, proto))
    proto.write(PAYLOAD)
    await asyncio.wait_for(proto.drain(), 20)
    transport.write_eof()
    line = await asyncio.wait_for(proto.wait_for_data(len(f"TOTAL {len(PAYLOAD)}\n")), 20)
    assert line == f"TOTAL {len(PAYLOAD)}\n".encode()
    assert await asyncio.wait_for(proto.lost, 20) is None
    sink = factory.protocols[0]
    assert sink.got_eof and sink.total == len(PAYLOAD)
    assert await asyncio.wait_for(sink.lost, 20) is None


@pytest.mark.asyncio
async def test_write_after_close_is_refused(sink_server, transports):
    server, _ = await sink_server()
    transport, proto = await small_buffer_client(port_of(server))
    transport.close()
    assert await asyncio.wait_for(proto.lost, 20) is None
    with pytest.raises(ConnectionClosed):
        proto.write(b"late")
    with pytest.raises(ConnectionClosed):
        await proto.drain()


@pytest.mark.asyncio
async def test_connection_lost_wakes_a_blocked_drain(sink_server):
    server, factory = await sink_server(PausedSink)
    transport, proto = await small_buffer_client(port_of(server), high=HIGH, low=LOW)
    await asyncio.wait_for(factory.connected.wait(), 20)
    proto.write(PAYLOAD)
    drain = asyncio.create_task(proto.drain())
    await asyncio.sleep(0)
    transport.abort()
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(drain, 20)
    await asyncio.wait_for(proto.lost, 20)


@pytest.mark.asyncio
async def test_buffered_protocol_echo():
    loop = asyncio.get_running_loop()
    factory = ServerFactory(BufferedEchoProtocol, chunk=4096)
    server = await loop.create_server(factory, "127.0.0.1", 0)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port_of(server))
        data = bytes(range(256)) * 400  # 100 KiB
        writer.write(data)
        await writer.drain()
        echoed = await asyncio.wait_for(reader.readexactly(len(data)), 20)
        assert echoed == data
        proto = factory.protocols[0]
        assert proto.echoed == len(data)
        assert proto.chunks >= len(data) // 4096
        writer.close()
        await writer.wait_closed()
        assert await asyncio.wait_for(proto.lost, 20) is None
    finally:
        server.close()
        await server.wait_closed()
