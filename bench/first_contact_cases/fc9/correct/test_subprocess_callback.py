"""Child processes that connect back to a socket listening in the test.

This is the pattern of process supervisors and test harnesses (pytest-xdist's
workers, multiprocessing-style workers, Jupyter kernels).  The parent listens
on an ephemeral port or a Unix socket and passes the address on argv.  The
child connects back, handshakes and works.  The parent waits for the
connection with a generous timeout, because interpreter start-up time varies a
lot on a loaded machine.
"""

import asyncio
import os
import sys

import pytest
import pytest_asyncio

HELLO_CHILD = r"""
import os, socket, sys
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
sock.sendall(b"hello %d\n" % os.getpid())
reply = sock.makefile("rb").readline()
sys.exit(0 if reply == b"ack\n" else 3)
"""

WORKER_CHILD = r"""
import socket, sys
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
stream = sock.makefile("rwb")
stream.write(b"ready\n"); stream.flush()
for line in stream:
    cmd = line.strip()
    if cmd == b"quit":
        break
    stream.write(b"%d\n" % (int(cmd) ** 2)); stream.flush()
"""

RETRYING_CHILD = r"""
import socket, sys, time
attempts = 0
while True:
    attempts += 1
    sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
    line = sock.makefile("rb").readline()
    if line == b"ready\n":
        break
    sock.close()
    time.sleep(0.2)
print("connected after %d attempts" % attempts, flush=True)
"""

UNIX_CHILD = r"""
import socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(30)
sock.connect(sys.argv[1])
sock.sendall(b"via unix\n")
sock.shutdown(socket.SHUT_WR)
print(sock.makefile("rb").read().decode(), end="", flush=True)
"""


class Listener:
    def __init__(self, handler):
        self.handler = handler
        self.connections = asyncio.Queue()
        self.count = 0
        self._writers = []
        self._tasks = set()

    async def _on_connect(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.append(writer)
        self.count += 1
        try:
            await self.handler(self, reader, writer)
        finally:
            self._tasks.discard(asyncio.current_task())

    async def start_tcp(self):
        self.server = await asyncio.start_server(self._on_connect, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def start_unix(self, path):
        self.server = await asyncio.start_unix_server(self._on_connect, path=str(path))
        return self

    async def close(self):
        self.server.close()
        await self.server.wait_closed()
        for w in self._writers:
            w.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@pytest_asyncio.fixture
async def spawn():
    procs = []

    async def run(code, *args, stdout=None):
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code, *map(str, args),
                                                    stdout=stdout)
        procs.append(proc)
        return proc

    yield run
    for proc in procs:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.mark.asyncio
async def test_child_connects_back_and_handshakes(spawn):
    async def handler(listener, reader, writer):
        line = await reader.readline()
        await listener.connections.put(line)
        writer.write(b"ack\n")
        await writer.drain()

    listener = await Listener(handler).start_tcp()
    try:
        proc = await spawn(HELLO_CHILD, listener.port)
        hello = await asyncio.wait_for(listener.connections.get(), 30)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        await listener.close()
    assert hello == b"hello %d\n" % proc.pid


@pytest.mark.asyncio
async def test_worker_process_keeps_connection_between_jobs(spawn):
    ready = asyncio.Event()
    finished = asyncio.Event()
    channel = {}

    async def handler(listener, reader, writer):
        channel["io"] = (reader, writer)
        assert await reader.readline() == b"ready\n"
        ready.set()
        await finished.wait()  # the test drives the connection from here on

    listener = await Listener(handler).start_tcp()
    try:
        proc = await spawn(WORKER_CHILD, listener.port)
        await asyncio.wait_for(ready.wait(), 30)
        reader, writer = channel["io"]
        results = []
        for n in (3, 7, 12):
            writer.write(b"%d\n" % n)
            await writer.drain()
            results.append(int(await asyncio.wait_for(reader.readline(), 30)))
            await asyncio.sleep(0.5)  # the worker idles on an open connection
        writer.write(b"quit\n")
        await writer.drain()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        finished.set()
        await listener.close()
    assert results == [9, 49, 144]
    assert listener.count == 1


@pytest.mark.asyncio
async def test_child_retries_until_parent_is_ready(spawn):
    async def handler(listener, reader, writer):
        if listener.count == 1:
            writer.write(b"busy\n")
            writer.close()  # first attempt is turned away
        else:
            writer.write(b"ready\n")
            await writer.drain()

    listener = await Listener(handler).start_tcp()
    try:
        proc = await spawn(RETRYING_CHILD, listener.port, stdout=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        await listener.close()
    assert proc.returncode == 0
    assert out.decode().strip() == "connected after 2 attempts"
    assert listener.count == 2


@pytest.mark.asyncio
async def test_child_connects_over_unix_socket(spawn, tmp_path):
    path = tmp_path / "ctl.sock"

    async def handler(listener, reader, writer):
        data = await reader.read()  # child half-closes after sending
        writer.write(b"echo: " + data)
        await writer.drain()
        writer.close()

    listener = await Listener(handler).start_unix(path)
    try:
        proc = await spawn(UNIX_CHILD, path, stdout=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        await listener.close()
        if path.exists():
            os.unlink(path)
    assert proc.returncode == 0
    assert out == b"echo: via unix\n"
