"""Low-level asyncio transports and protocols: framing, flow control, half-close.

This imitates the transport-level tests that database drivers and protocol
libraries ship (asyncpg's protocol tests, aioredis' parser tests, websockets'
legacy protocol tests):

* ``loop.create_server`` / ``loop.create_connection`` with ``Protocol`` subclasses;
* line framing that does not depend on how TCP segments the bytes;
* ``pause_reading`` / ``resume_reading`` on the receiving side;
* ``pause_writing`` / ``resume_writing`` when one large write overflows the buffer;
* half-close with ``write_eof`` and ``eof_received``;
* a ``BufferedProtocol`` receiving a large payload.
"""

import asyncio
import hashlib

import pytest
import pytest_asyncio


class LineServerProtocol(asyncio.Protocol):
    """Upper-cases every newline-terminated line; reports byte counts on EOF."""

    def __init__(self, registry):
        self.registry = registry
        self.buffer = b""
        self.total = 0
        self.events = []
        self.paused = False

    def connection_made(self, transport):
        self.transport = transport
        self.events.append("made")
        self.registry.append(self)

    def data_received(self, data):
        self.total += len(data)
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if line == b"PAUSE":
                self.transport.pause_reading()
                self.paused = True
            elif line == b"CLOSE":
                self.transport.close()
                return
            else:
                self.transport.write(line.upper() + b"\n")

    def eof_received(self):
        self.events.append("eof")
        self.transport.write(b"TOTAL %d\n" % self.total)
        return False  # close the transport after this

    def connection_lost(self, exc):
        self.events.append("lost")


class CountingServerProtocol(asyncio.Protocol):
    """Counts and hashes bytes; can start with reading paused."""

    def __init__(self, registry, start_paused):
        self.registry = registry
        self.start_paused = start_paused
        self.count = 0
        self.digest = hashlib.sha256()
        self.done = asyncio.get_running_loop().create_future()

    def connection_made(self, transport):
        self.transport = transport
        if self.start_paused:
            transport.pause_reading()
        self.registry.append(self)

    def data_received(self, data):
        self.count += len(data)
        self.digest.update(data)

    def eof_received(self):
        self.transport.write(self.digest.hexdigest().encode())
        if not self.done.done():
            self.done.set_result(self.count)
        return False


class ClientProtocol(asyncio.Protocol):
    def __init__(self):
        self.received = bytearray()
        self.lines = asyncio.Queue()
        self.eof = asyncio.get_running_loop().create_future()
        self.lost = asyncio.get_running_loop().create_future()
        self.flow_events = []
        self._partial = b""

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.received += data
        self._partial += data
        while b"\n" in self._partial:
            line, self._partial = self._partial.split(b"\n", 1)
            self.lines.put_nowait(line)

    def eof_received(self):
        if not self.eof.done():
            self.eof.set_result(bytes(self.received))

    def connection_lost(self, exc):
        if not self.lost.done():
            self.lost.set_result(exc)

    def pause_writing(self):
        self.flow_events.append("pause")

    def resume_writing(self):
        self.flow_events.append("resume")


class SinkBufferedProtocol(asyncio.BufferedProtocol):
    def __init__(self, expected):
        self.expected = expected
        self.buf = bytearray(64 * 1024)
        self.data = bytearray()
        self.calls = 0
        self.complete = asyncio.get_running_loop().create_future()

    def connection_made(self, transport):
        self.transport = transport

    def get_buffer(self, sizehint):
        return self.buf

    def buffer_updated(self, nbytes):
        self.calls += 1
        self.data += self.buf[:nbytes]
        if len(self.data) >= self.expected and not self.complete.done():
            self.complete.set_result(bytes(self.data))

    def connection_lost(self, exc):
        if not self.complete.done():
            self.complete.set_exception(ConnectionError("lost early"))


@pytest_asyncio.fixture
async def line_server():
    loop = asyncio.get_running_loop()
    protocols = []
    server = await loop.create_server(lambda: LineServerProtocol(protocols), "127.0.0.1", 0)
    server.protocols = protocols
    server.port = server.sockets[0].getsockname()[1]
    yield server
    server.close()
    for proto in protocols:
        proto.transport.close()
    await server.wait_closed()


@pytest_asyncio.fixture
async def client_factory():
    loop = asyncio.get_running_loop()
    transports = []

    async def connect(port):
        transport, proto = await loop.create_connection(ClientProtocol, "127.0.0.1", port)
        transports.append(transport)
        return transport, proto

    yield connect
    for transport in transports:
        transport.close()
    await asyncio.sleep(0)


@pytest.mark.asyncio
async def test_line_framing_is_independent_of_segmentation(line_server, client_factory):
    transport, proto = await client_factory(line_server.port)
    message = b"alpha\nbeta\ngamma delta\n"
    for i in range(len(message)):
        transport.write(message[i:i + 1])
        await asyncio.sleep(0)
    lines = [await asyncio.wait_for(proto.lines.get(), 10) for _ in range(3)]
    assert lines == [b"ALPHA", b"BETA", b"GAMMA DELTA"]
    assert transport.get_extra_info("peername")[1] == line_server.port


@pytest.mark.asyncio
async def test_paused_reader_gets_no_data_until_resumed(line_server, client_factory):
    transport, proto = await client_factory(line_server.port)
    transport.write(b"one\nPAUSE\n")
    assert await asyncio.wait_for(proto.lines.get(), 10) == b"ONE"
    await asyncio.wait_for(_until(lambda: line_server.protocols and line_server.protocols[0].paused), 10)
    server_proto = line_server.protocols[0]
    seen = server_proto.total
    transport.write(b"two\nthree\n")
    await asyncio.sleep(0.3)
    # Reading is paused: the bytes sit in the kernel buffer, not in the protocol.
    assert server_proto.total == seen
    assert proto.lines.empty()
    server_proto.transport.resume_reading()
    assert [await asyncio.wait_for(proto.lines.get(), 10) for _ in range(2)] == [b"TWO", b"THREE"]


@pytest.mark.asyncio
async def test_large_write_pauses_writer_until_peer_reads(client_factory):
    loop = asyncio.get_running_loop()
    receivers = []
    server = await loop.create_server(
        lambda: CountingServerProtocol(receivers, start_paused=True), "127.0.0.1", 0
    )
    try:
        transport, proto = await client_factory(server.sockets[0].getsockname()[1])
        payload = bytes(range(256)) * (256 * 1024)  # 64 MiB, far beyond any socket buffer
        transport.write(payload)
        # One send() cannot take 64 MiB, so the transport buffered the rest.
        assert transport.get_write_buffer_size() > 0
        assert proto.flow_events == ["pause"]
        await asyncio.sleep(0.3)
        # Kernel buffers are at most a few tens of MiB, so the writer stays paused.
        assert proto.flow_events == ["pause"]
        await asyncio.wait_for(_until(lambda: receivers), 10)
        receivers[0].transport.resume_reading()
        await asyncio.wait_for(_until(lambda: "resume" in proto.flow_events), 30)
        transport.write_eof()
        count = await asyncio.wait_for(receivers[0].done, 30)
        digest = await asyncio.wait_for(proto.eof, 30)
        assert count == len(payload)
        assert digest.decode() == hashlib.sha256(payload).hexdigest()
        assert proto.flow_events == ["pause", "resume"]
    finally:
        server.close()
        for r in receivers:
            r.transport.close()
        await server.wait_closed()


@pytest.mark.asyncio
async def test_half_close_lets_server_answer_after_eof(line_server, client_factory):
    transport, proto = await client_factory(line_server.port)
    assert transport.can_write_eof()
    transport.write(b"hello\nworld\n")
    transport.write_eof()
    everything = await asyncio.wait_for(proto.eof, 10)
    assert everything == b"HELLO\nWORLD\nTOTAL 12\n"
    assert await asyncio.wait_for(proto.lost, 10) is None
    await asyncio.wait_for(_until(lambda: line_server.protocols[0].events[-1] == "lost"), 10)
    assert line_server.protocols[0].events == ["made", "eof", "lost"]


@pytest.mark.asyncio
async def test_server_side_close_reaches_client_connection_lost(line_server, client_factory):
    transport, proto = await client_factory(line_server.port)
    transport.write(b"bye\nCLOSE\nignored\n")
    assert await asyncio.wait_for(proto.lines.get(), 10) == b"BYE"
    assert await asyncio.wait_for(proto.lost, 10) is None
    assert transport.is_closing()


@pytest.mark.asyncio
async def test_buffered_protocol_receives_large_payload():
    loop = asyncio.get_running_loop()
    payload = hashlib.sha256(b"seed").digest() * 32768  # 1 MiB

    async def send_payload(reader, writer):
        writer.write(payload)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(send_payload, "127.0.0.1", 0)
    try:
        transport, proto = await loop.create_connection(
            lambda: SinkBufferedProtocol(len(payload)), "127.0.0.1",
            server.sockets[0].getsockname()[1],
        )
        try:
            data = await asyncio.wait_for(proto.complete, 10)
        finally:
            transport.close()
        assert data == payload
        assert proto.calls >= len(payload) // len(proto.buf)
    finally:
        server.close()
        await server.wait_closed()


async def _until(predicate):
    while not predicate():
        await asyncio.sleep(0.01)
