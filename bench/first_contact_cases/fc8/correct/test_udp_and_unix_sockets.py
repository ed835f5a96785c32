"""UDP and Unix-domain-socket tests, modelled on a metrics agent (statsd-style
UDP datagrams on localhost port 0) and on a local control socket of a daemon
(newline-delimited JSON over a Unix socket created in ``tmp_path``).

Uses the low-level ``DatagramProtocol`` API and ``loop.sock_sendto`` /
``sock_recvfrom``, ``asyncio.start_unix_server`` / ``open_unix_connection`` with
a session-scoped short temporary directory (``AF_UNIX`` paths are limited to
~108 bytes) and, via ``monkeypatch.chdir``, a relative socket path in
``tmp_path``.
"""

import asyncio
import json
import os
import socket
import tempfile

import pytest
import pytest_asyncio


class StatsdCollector(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.counters: dict[str, int] = {}
        self.packets = 0
        self.got_packet = asyncio.Event()
        self.transport = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr) -> None:
        self.packets += 1
        for line in data.decode().splitlines():
            name, rest = line.split(":", 1)
            value, kind = rest.split("|")
            if kind == "c":
                self.counters[name] = self.counters.get(name, 0) + int(value)
        if self.transport is not None:
            self.transport.sendto(b"ack:%d" % self.packets, addr)
        self.got_packet.set()


class AckClient(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.acks: asyncio.Queue[bytes] = asyncio.Queue()

    def datagram_received(self, data: bytes, addr) -> None:
        self.acks.put_nowait(data)


@pytest_asyncio.fixture
async def statsd():
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_datagram_endpoint(
        StatsdCollector, local_addr=("127.0.0.1", 0)
    )
    yield proto, transport.get_extra_info("sockname")
    transport.close()


@pytest.mark.asyncio
async def test_udp_counter_datagrams_are_aggregated(statsd):
    proto, addr = statsd
    loop = asyncio.get_running_loop()
    transport, client = await loop.create_datagram_endpoint(AckClient, remote_addr=addr)
    try:
        for i in range(10):
            transport.sendto(b"requests:1|c\nbytes:%d|c" % (i * 10))
            # Wait for the ack so that no datagram can be dropped by a full buffer.
            ack = await asyncio.wait_for(client.acks.get(), timeout=10)
            assert ack == b"ack:%d" % (i + 1)
    finally:
        transport.close()
    assert proto.counters == {"requests": 10, "bytes": sum(i * 10 for i in range(10))}


@pytest.mark.asyncio
async def test_udp_with_plain_socket_client(statsd):
    proto, addr = statsd
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setblocking(False)
    try:
        await loop.sock_sendto(sock, b"logins:3|c", addr)
        await asyncio.wait_for(proto.got_packet.wait(), timeout=10)
        data, _ = await asyncio.wait_for(loop.sock_recvfrom(sock, 100), timeout=10)
    finally:
        sock.close()
    assert data == b"ack:1"
    assert proto.counters == {"logins": 3}


@pytest.fixture(scope="session")
def sock_dir():
    # AF_UNIX paths are limited to ~108 bytes; pytest's tmp_path can be long.
    d = tempfile.mkdtemp(prefix="fc8s")
    yield d
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))
    os.rmdir(d)


class ControlServer:
    def __init__(self) -> None:
        self.jobs: list[str] = []

    async def handle(self, reader, writer):
        try:
            async for raw in reader:
                msg = json.loads(raw)
                if msg["op"] == "submit":
                    self.jobs.append(msg["job"])
                    resp = {"ok": True, "position": len(self.jobs)}
                elif msg["op"] == "list":
                    resp = {"ok": True, "jobs": list(self.jobs)}
                else:
                    resp = {"ok": False, "error": "bad op"}
                writer.write(json.dumps(resp).encode() + b"\n")
                await writer.drain()
        finally:
            writer.close()


@pytest_asyncio.fixture
async def control_socket(sock_dir, request):
    path = os.path.join(sock_dir, f"{request.node.name[-20:]}.sock")
    ctl = ControlServer()
    server = await asyncio.start_unix_server(ctl.handle, path=path)
    yield ctl, path
    server.close()
    await server.wait_closed()
    if os.path.exists(path):
        os.unlink(path)


async def rpc(reader, writer, **msg):
    writer.write(json.dumps(msg).encode() + b"\n")
    await writer.drain()
    return json.loads(await asyncio.wait_for(reader.readline(), timeout=10))


@pytest.mark.asyncio
async def test_unix_socket_submit_and_list(control_socket):
    ctl, path = control_socket
    assert os.path.exists(path)
    reader, writer = await asyncio.open_unix_connection(path)
    try:
        assert await rpc(reader, writer, op="submit", job="build") == {"ok": True, "position": 1}
        assert await rpc(reader, writer, op="submit", job="test") == {"ok": True, "position": 2}
        assert await rpc(reader, writer, op="list") == {"ok": True, "jobs": ["build", "test"]}
        assert (await rpc(reader, writer, op="nope"))["ok"] is False
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.asyncio
async def test_unix_socket_file_lives_in_tmp_path(tmp_path, monkeypatch):
    # Short relative names keep us under the AF_UNIX limit even in deep tmp dirs.
    monkeypatch.chdir(tmp_path)
    server = await asyncio.start_unix_server(lambda r, w: w.close(), path="s.sock")
    try:
        assert (tmp_path / "s.sock").exists()
        reader, writer = await asyncio.open_unix_connection("s.sock")
        assert await asyncio.wait_for(reader.read(), timeout=10) == b""
        writer.close()
        await writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()
