"""Local TCP server tests, modelled on the integration tests of a line-based
protocol server (think a tiny memcached/redis-like text protocol) built on
``asyncio.start_server`` and bound to port 0.

The server fixture is async and function-scoped; clients connect with
``asyncio.open_connection``.  Tests cover request/response, pipelining,
many concurrent clients incrementing server-side state under a lock, and
shutdown closing idle connections.
"""

import asyncio

import pytest
import pytest_asyncio


class KVServer:
    def __init__(self) -> None:
        self.store: dict[str, str] = {}
        self.lock = asyncio.Lock()
        self.connections: set[asyncio.StreamWriter] = set()
        self.server: asyncio.base_events.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections.add(writer)
        try:
            while line := await reader.readline():
                parts = line.decode().strip().split(" ", 2)
                cmd = parts[0].upper()
                if cmd == "GET":
                    reply = self.store.get(parts[1], "(nil)")
                elif cmd == "SET":
                    self.store[parts[1]] = parts[2]
                    reply = "OK"
                elif cmd == "INCR":
                    async with self.lock:  # read-modify-write spans an await
                        current = int(self.store.get(parts[1], "0"))
                        await asyncio.sleep(0)  # e.g. persistence hook
                        self.store[parts[1]] = str(current + 1)
                        reply = self.store[parts[1]]
                elif cmd == "QUIT":
                    writer.write(b"BYE\n")
                    await writer.drain()
                    break
                else:
                    reply = "ERR unknown command"
                writer.write(reply.encode() + b"\n")
                await writer.drain()
        except ConnectionResetError:
            pass
        finally:
            self.connections.discard(writer)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionResetError, BrokenPipeError):
                pass

    async def start(self) -> int:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        for w in list(self.connections):
            w.close()
        await asyncio.wait_for(self.server.wait_closed(), timeout=10)


@pytest_asyncio.fixture
async def kv():
    srv = KVServer()
    port = await srv.start()
    yield srv, port
    await srv.stop()


async def request(reader, writer, line: str) -> str:
    writer.write(line.encode() + b"\n")
    await writer.drain()
    return (await asyncio.wait_for(reader.readline(), timeout=10)).decode().strip()


@pytest.mark.asyncio
async def test_set_then_get(kv):
    _, port = kv
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        assert await request(reader, writer, "SET greeting hello world") == "OK"
        assert await request(reader, writer, "GET greeting") == "hello world"
        assert await request(reader, writer, "GET missing") == "(nil)"
        assert await request(reader, writer, "QUIT") == "BYE"
        assert await asyncio.wait_for(reader.read(), timeout=10) == b""
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.asyncio
async def test_pipelined_requests_are_answered_in_order(kv):
    _, port = kv
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"".join(f"SET k{i} v{i}\n".encode() for i in range(20)))
        writer.write(b"".join(f"GET k{i}\n".encode() for i in range(20)))
        await writer.drain()
        replies = [
            (await asyncio.wait_for(reader.readline(), timeout=10)).decode().strip()
            for _ in range(40)
        ]
        assert replies[:20] == ["OK"] * 20
        assert replies[20:] == [f"v{i}" for i in range(20)]
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.asyncio
async def test_concurrent_increments_are_not_lost(kv):
    srv, port = kv

    async def client(n):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for _ in range(n):
                await request(reader, writer, "INCR hits")
        finally:
            writer.close()
            await writer.wait_closed()

    await asyncio.wait_for(asyncio.gather(*(client(25) for _ in range(8))), timeout=30)
    assert srv.store["hits"] == str(8 * 25)


@pytest.mark.asyncio
async def test_stop_disconnects_idle_clients():
    srv = KVServer()
    port = await srv.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert await request(reader, writer, "SET x 1") == "OK"
    await srv.stop()
    # The server closed our connection: EOF (or a reset) arrives promptly.
    try:
        data = await asyncio.wait_for(reader.read(), timeout=10)
    except ConnectionResetError:
        data = b""
    assert data == b""
    writer.close()
    try:
        await writer.wait_closed()
    except (ConnectionResetError, BrokenPipeError):
        pass
    assert not srv.server.is_serving()
    assert srv.connections == set()
