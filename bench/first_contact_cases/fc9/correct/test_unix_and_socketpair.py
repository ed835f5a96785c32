"""Unix-domain stream sockets and socketpair pipes.

This follows the tests of local-daemon clients (a Docker-engine-style API over a
Unix socket, a supervisor control socket) and of worker pools that talk to
their children over ``socket.socketpair``.  The sockets live under pytest's
temporary directory.  Peer credentials are checked with ``SO_PEERCRED``, stale
socket files are replaced, and half-closing one end of a socketpair is
observed from the other end.
"""

import asyncio
import json
import os
import socket
import struct

import pytest
import pytest_asyncio

MAX_SUN_PATH = 100


class LocalAPIServer:
    """JSON-over-HTTP/1.1 API on a Unix socket, keep-alive by default."""

    def __init__(self, path):
        self.path = str(path)
        self.peers = []
        self._tasks = set()
        self._writers = set()

    async def start(self):
        if os.path.exists(self.path):  # stale file from a crashed daemon
            os.unlink(self.path)
        self._server = await asyncio.start_unix_server(self._handle, path=self.path)
        return self

    async def close(self):
        self._server.close()
        await self._server.wait_closed()
        for writer in list(self._writers):
            writer.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if os.path.exists(self.path):
            os.unlink(self.path)

    async def _handle(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.add(writer)
        sock = writer.get_extra_info("socket")
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, gid = struct.unpack("3i", creds)
        self.peers.append((pid, uid, gid))
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                path = head.split(b" ", 2)[1].decode()
                if path == "/_ping":
                    payload = {"ok": True}
                elif path == "/info":
                    payload = {"peer_pid": pid, "peer_uid": uid}
                else:
                    payload = {"message": f"no such endpoint {path}"}
                body = json.dumps(payload).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        finally:
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(asyncio.current_task())


async def api_get(reader, writer, path):
    writer.write(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
    return json.loads(await reader.readexactly(length))


@pytest.fixture
def socket_path(tmp_path, tmp_path_factory):
    path = tmp_path / "api.sock"
    if len(str(path)) > MAX_SUN_PATH:  # sun_path is limited to ~108 bytes
        path = tmp_path_factory.mktemp("uds") / "api.sock"
    return path


@pytest_asyncio.fixture
async def api(socket_path):
    server = await LocalAPIServer(socket_path).start()
    yield server
    await server.close()


@pytest_asyncio.fixture
async def api_conn(api):
    reader, writer = await asyncio.open_unix_connection(api.path)
    yield reader, writer
    writer.close()
    await writer.wait_closed()


@pytest.mark.asyncio
async def test_ping_over_unix_socket(api, api_conn):
    assert os.path.exists(api.path)
    assert await asyncio.wait_for(api_get(*api_conn, "/_ping"), 10) == {"ok": True}


@pytest.mark.asyncio
async def test_peer_credentials_and_keepalive(api, api_conn):
    first = await asyncio.wait_for(api_get(*api_conn, "/info"), 10)
    await asyncio.sleep(0.5)
    second = await asyncio.wait_for(api_get(*api_conn, "/info"), 10)
    assert first == second == {"peer_pid": os.getpid(), "peer_uid": os.getuid()}
    assert len(api.peers) == 1  # both requests used the same connection


@pytest.mark.asyncio
async def test_stale_socket_file_is_replaced_and_removed(socket_path):
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(socket_path))  # leaves a socket file behind, nobody listening
    stale.close()
    assert socket_path.exists()
    with pytest.raises(ConnectionRefusedError):
        await asyncio.open_unix_connection(str(socket_path))
    server = await LocalAPIServer(socket_path).start()
    try:
        reader, writer = await asyncio.open_unix_connection(str(socket_path))
        try:
            assert await asyncio.wait_for(api_get(reader, writer, "/_ping"), 10) == {"ok": True}
        finally:
            writer.close()
            await writer.wait_closed()
    finally:
        await server.close()
    assert not socket_path.exists()


@pytest.mark.asyncio
async def test_socketpair_streams_and_half_close():
    left, right = socket.socketpair()
    l_reader, l_writer = await asyncio.open_connection(sock=left)
    r_reader, r_writer = await asyncio.open_connection(sock=right)
    try:
        l_writer.write(b"job 1\njob 2\n")
        l_writer.write_eof()  # parent: no more jobs
        jobs = []
        while line := await asyncio.wait_for(r_reader.readline(), 10):
            jobs.append(line.strip())
        assert jobs == [b"job 1", b"job 2"]
        assert r_reader.at_eof()
        # The other direction is still open after the half-close.
        r_writer.write(b"done 2\n")
        await r_writer.drain()
        assert await asyncio.wait_for(l_reader.readline(), 10) == b"done 2\n"
    finally:
        for w in (l_writer, r_writer):
            w.close()
        await asyncio.gather(l_writer.wait_closed(), r_writer.wait_closed(),
                             return_exceptions=True)


class WorkerControlProtocol(asyncio.Protocol):
    """The child end of a control pipe: answers 'status' and 'sleep <ms>' commands."""

    def connection_made(self, transport):
        self.transport = transport
        self.buffer = b""
        self.closed = asyncio.get_running_loop().create_future()
        self.pending = set()

    def data_received(self, data):
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            cmd, _, arg = line.decode().partition(" ")
            if cmd == "status":
                self.transport.write(b"status idle\n")
            elif cmd == "sleep":
                task = asyncio.get_running_loop().create_task(self._sleep(int(arg)))
                self.pending.add(task)
                task.add_done_callback(self.pending.discard)

    async def _sleep(self, ms):
        await asyncio.sleep(ms / 1000)
        self.transport.write(b"slept %d\n" % ms)

    def connection_lost(self, exc):
        for task in self.pending:
            task.cancel()
        self.closed.set_result(exc)


@pytest.mark.asyncio
async def test_socketpair_control_channel_with_protocol():
    loop = asyncio.get_running_loop()
    parent_sock, child_sock = socket.socketpair()
    transport, proto = await loop.connect_accepted_socket(WorkerControlProtocol, child_sock)
    reader, writer = await asyncio.open_connection(sock=parent_sock)
    try:
        writer.write(b"sleep 300\nstatus\n")
        await writer.drain()
        replies = {await asyncio.wait_for(reader.readline(), 10) for _ in range(2)}
        assert replies == {b"status idle\n", b"slept 300\n"}
    finally:
        writer.close()
        await writer.wait_closed()
    assert await asyncio.wait_for(proto.closed, 10) is None
    assert transport.is_closing()
