"""Model of asyncpg issue #320: "Race condition on __async_init__ when min_size > 0".

Report (paraphrased): an application created its pool lazily from a
module-level ``get_pool()`` that called ``asyncpg.create_pool(...)`` without
awaiting it, and every user then did ``await pool``.  Two tasks awaited the same
pool object.  The second one found initialization not yet finished and ran
``_async__init__`` again, so it reconnected the pool's connection holders.
asyncpg 0.15 failed with ``AssertionError`` (``assert self._con is None`` in
``PoolConnectionHolder.connect``); 0.16 raised ``InternalClientError``.  The
suggested workarounds were ``min_size=0`` or a lock around the first await.

Model: ``Pool.__await__`` runs ``_async_init`` whenever ``_initialized`` is
false.  There is no guard for "initialization already in progress".
``_async_init`` connects ``MIN_SIZE`` holders one after another to a fake
database server that answers a startup handshake after ``HANDSHAKE_LATENCY``.

Natural timing: the request handler that first needs the pool starts at once;
a second handler starts ``SECOND_USER_DELAY`` = 0.3 s later.  Initialization
takes about 2 x 0.02 s, so the second ``await pool`` sees a finished pool.
Bad interleaving: the handshake answers late (``HANDSHAKE_LATENCY`` >= 0.15),
or the loop is held up while the first handshake is in flight.  The second
handler then reaches ``await pool`` during initialization and connects the
holders again.  Expected failure: ``AssertionError: connection already
established`` from a holder, or the database seeing more than ``MIN_SIZE``
connections.
"""

import asyncio

import pytest

MIN_SIZE = 2
HANDSHAKE_LATENCY = 0.02
SECOND_USER_DELAY = 0.3


class FakePostgres:
    def __init__(self):
        self.sessions = 0
        self._tasks = set()
        self._writers = set()

    async def start(self):
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self):
        self._server.close()
        await self._server.wait_closed()
        for w in list(self._writers):
            w.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.add(writer)
        try:
            if await reader.readline() != b"STARTUP\n":
                return
            await asyncio.sleep(HANDSHAKE_LATENCY)  # authentication, backend start
            self.sessions += 1
            writer.write(b"READY %d\n" % self.sessions)
            await writer.drain()
            while line := await reader.readline():
                writer.write(b"ROW " + line)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(asyncio.current_task())


class Connection:
    def __init__(self, reader, writer, backend_id):
        self.reader, self.writer, self.backend_id = reader, writer, backend_id

    async def fetchval(self, query):
        self.writer.write(query.encode() + b"\n")
        await self.writer.drain()
        return (await self.reader.readline()).decode().split(" ", 1)[1].strip()

    def close(self):
        self.writer.close()


async def connect(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"STARTUP\n")
    await writer.drain()
    ready = await reader.readline()
    return Connection(reader, writer, int(ready.split()[1]))


class PoolConnectionHolder:
    def __init__(self, pool):
        self._pool = pool
        self._con = None

    async def connect(self):
        assert self._con is None, "connection already established"
        self._con = await connect(self._pool.port)


class Pool:
    def __init__(self, port, min_size):
        self.port = port
        self._holders = [PoolConnectionHolder(self) for _ in range(min_size)]
        self._initialized = False
        self.all_connections = []

    async def _async_init(self):
        if self._initialized:
            return self
        for holder in self._holders:
            await holder.connect()
            self.all_connections.append(holder._con)
        self._initialized = True
        return self

    def __await__(self):
        return self._async_init().__await__()

    async def fetchval(self, query):
        return await self._holders[0]._con.fetchval(query)

    def terminate(self):
        for con in self.all_connections:
            con.close()


_pool = None


def get_pool(port):
    global _pool
    if _pool is None:
        _pool = Pool(port, min_size=MIN_SIZE)
    return _pool


@pytest.mark.asyncio
async def test_two_handlers_awaiting_the_lazy_pool():
    global _pool
    _pool = None
    db = await FakePostgres().start()

    async def handler(delay, query):
        await asyncio.sleep(delay)
        pool = get_pool(db.port)
        await pool
        return await pool.fetchval(query)

    try:
        results = await asyncio.wait_for(
            asyncio.gather(handler(0, "select 1"), handler(SECOND_USER_DELAY, "select 2")), 10
        )
    finally:
        if _pool is not None:
            _pool.terminate()
        _pool = None
        await db.close()
    assert results == ["select 1", "select 2"]
    assert db.sessions == MIN_SIZE, f"database saw {db.sessions} sessions for a pool of {MIN_SIZE}"
