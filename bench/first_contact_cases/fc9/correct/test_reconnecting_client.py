"""A client that reconnects with backoff when its server restarts.

Modelled on the reconnect tests of redis-py's asyncio client, aio-pika's
RobustConnection and nats.py.  The server is a tiny line-protocol key/value
store.  Its data outlives restarts, as if it were persisted to disk.  A service
registry tells clients where the current instance listens: each restart binds
a fresh port-0 socket, and the registry says "down" in between.  Idempotent
commands are retried transparently after a reconnect.  Non-idempotent ones are
not.
"""

import asyncio
import time

import pytest
import pytest_asyncio


class Registry:
    def __init__(self):
        self.address = None

    def resolve(self):
        return self.address


class KVServer:
    def __init__(self, registry):
        self.registry = registry
        self.data = {}
        self.counter = 0
        self.crash_on_incr = False
        self.generation = 0
        self._server = None
        self._tasks = set()
        self._writers = set()

    async def start(self):
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.generation += 1
        self.registry.address = ("127.0.0.1", self._server.sockets[0].getsockname()[1])

    async def stop(self):
        self.registry.address = None
        self._server.close()
        await self._server.wait_closed()
        for w in list(self._writers):
            w.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.add(writer)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                parts = line.decode().split()
                cmd = parts[0]
                if cmd == "PING":
                    reply = f"PONG {self.generation}"
                elif cmd == "SET":
                    self.data[parts[1]] = parts[2]
                    reply = "OK"
                elif cmd == "GET":
                    reply = self.data.get(parts[1], "(nil)")
                elif cmd == "INCR":
                    self.counter += 1
                    if self.crash_on_incr:
                        self.crash_on_incr = False
                        return  # connection dropped before the reply
                    reply = str(self.counter)
                else:
                    reply = "ERR unknown"
                writer.write(reply.encode() + b"\n")
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(asyncio.current_task())


class GaveUp(ConnectionError):
    """Raised when every connection attempt failed."""


class ReconnectingClient:
    IDEMPOTENT = {"PING", "GET", "SET"}

    def __init__(self, resolve, backoff=(0.05, 0.1, 0.2, 0.4), max_attempts=None):
        self.resolve = resolve
        self.backoff = backoff
        self.max_attempts = max_attempts
        self.reader = self.writer = None
        self.connects = 0
        self.attempt_times = []

    async def _connect(self):
        attempt = 0
        while True:
            attempt += 1
            self.attempt_times.append(time.monotonic())
            address = self.resolve()
            try:
                if address is None:
                    raise ConnectionRefusedError("no instance registered")
                self.reader, self.writer = await asyncio.open_connection(*address)
                self.connects += 1
                return
            except OSError:
                if self.max_attempts is not None and attempt >= self.max_attempts:
                    raise GaveUp(f"gave up after {attempt} attempts")
                await asyncio.sleep(self.backoff[min(attempt - 1, len(self.backoff) - 1)])

    def _drop(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def _roundtrip(self, command):
        if self.writer is None:
            await self._connect()
        self.writer.write(command.encode() + b"\n")
        await self.writer.drain()
        line = await self.reader.readline()
        if not line:
            raise ConnectionResetError("server closed the connection")
        return line.decode().rstrip("\n")

    async def call(self, command):
        try:
            return await self._roundtrip(command)
        except GaveUp:
            raise
        except ConnectionError:
            self._drop()
            if command.split()[0] not in self.IDEMPOTENT:
                raise
            return await self._roundtrip(command)

    async def close(self):
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()
            self.reader = self.writer = None


@pytest_asyncio.fixture
async def registry_and_server():
    registry = Registry()
    server = KVServer(registry)
    await server.start()
    yield registry, server
    if server._server is not None:
        await server.stop()


@pytest_asyncio.fixture
async def client(registry_and_server):
    registry, _ = registry_and_server
    c = ReconnectingClient(registry.resolve)
    yield c
    await c.close()


@pytest.mark.asyncio
async def test_connection_kept_across_idle_pause(registry_and_server, client):
    assert await asyncio.wait_for(client.call("PING"), 10) == "PONG 1"
    local = client.writer.get_extra_info("sockname")
    await asyncio.sleep(0.5)
    assert await asyncio.wait_for(client.call("PING"), 10) == "PONG 1"
    assert client.writer.get_extra_info("sockname") == local
    assert client.connects == 1


@pytest.mark.asyncio
async def test_request_during_restart_completes_on_new_instance(registry_and_server, client):
    registry, server = registry_and_server
    assert await asyncio.wait_for(client.call("SET colour teal"), 10) == "OK"
    await server.stop()
    down_since = time.monotonic()

    async def bring_back():
        await asyncio.sleep(0.5)
        await server.start()

    restarter = asyncio.create_task(bring_back())
    value = await asyncio.wait_for(client.call("GET colour"), 30)
    await restarter
    assert value == "teal"
    assert time.monotonic() - down_since >= 0.5 - 0.01
    assert client.connects == 2
    assert await asyncio.wait_for(client.call("PING"), 10) == "PONG 2"


@pytest.mark.asyncio
async def test_backoff_schedule_is_respected(registry_and_server):
    registry, server = registry_and_server
    await server.stop()
    c = ReconnectingClient(registry.resolve, backoff=(0.1, 0.2, 0.3))
    try:
        connecting = asyncio.create_task(c.call("PING"))
        await asyncio.wait_for(_until(lambda: len(c.attempt_times) >= 4), 10)
        await server.start()
        assert await asyncio.wait_for(connecting, 30) == "PONG 2"
    finally:
        await c.close()
    gaps = [b - a for a, b in zip(c.attempt_times, c.attempt_times[1:])]
    for gap, expected in zip(gaps, (0.1, 0.2, 0.3, 0.3)):
        assert gap >= expected - 0.01


@pytest.mark.asyncio
async def test_client_gives_up_after_max_attempts(registry_and_server):
    registry, server = registry_and_server
    await server.stop()
    c = ReconnectingClient(registry.resolve, backoff=(0.05,), max_attempts=3)
    started = time.monotonic()
    with pytest.raises(GaveUp, match="gave up after 3 attempts"):
        await asyncio.wait_for(c.call("PING"), 10)
    assert time.monotonic() - started >= 2 * 0.05 - 0.01
    assert len(c.attempt_times) == 3


@pytest.mark.asyncio
async def test_non_idempotent_command_is_not_replayed(registry_and_server, client):
    _, server = registry_and_server
    assert await asyncio.wait_for(client.call("INCR"), 10) == "1"
    server.crash_on_incr = True
    with pytest.raises(ConnectionError):
        await asyncio.wait_for(client.call("INCR"), 10)
    assert server.counter == 2  # applied once, never replayed
    assert await asyncio.wait_for(client.call("INCR"), 10) == "3"
    assert client.connects == 2


async def _until(predicate):
    while not predicate():
        await asyncio.sleep(0.01)
