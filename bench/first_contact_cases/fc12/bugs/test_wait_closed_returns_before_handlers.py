"""Model of https://github.com/python/cpython/issues/79033 (bpo-34852, "Counter-intuitive behavior
of Server.close() / wait_closed()"; changed in 3.12 by https://github.com/python/cpython/pull/111336).
In Python 3.11 (checked on 3.11.7), Server.wait_closed() returns at once once close() has run and does
not wait for running connection handlers. Uses stock 3.11 asyncio.

Graceful shutdown does `server.close(); await server.wait_closed(); db.close()`, trusting
wait_closed() to wait for in-flight handlers. A client sends SAVE right away; the handler validates
for 0.05 s, then commits through the db (which does one I/O step and checks it is still open).
Shutdown starts at 0.5 s. Under natural timing the handler committed long before.

Bad interleaving: the handler's validation step ends no earlier than the shutdown's wake-up (a slow
step, or the loop busy from before 0.05 s to after 0.5 s, which runs both wake-ups in one
iteration). The handler starts the commit, the shutdown's wait_closed() returns immediately and the
db is closed under the commit: the order is lost and the client gets an error.
"""
import asyncio

import pytest


class DbClosed(RuntimeError):
    pass


class Db:
    def __init__(self):
        self.rows, self.closed = [], False

    async def commit(self, row):
        if self.closed:
            raise DbClosed("closed")
        await asyncio.sleep(0)  # the write round trip
        if self.closed:
            raise DbClosed("closed during commit")
        self.rows.append(row)

    def close(self):
        self.closed = True


@pytest.mark.asyncio
async def test_shutdown_waits_for_in_flight_saves():
    db, errors = Db(), []

    async def handle(reader, writer):
        try:
            line = (await reader.readline()).decode().strip()
            await asyncio.sleep(0.05)  # validation
            await db.commit(line.split()[1])
            writer.write(b"OK\n")
        except DbClosed as exc:
            errors.append(str(exc))
            writer.write(b"ERR\n")
        finally:
            await writer.drain()
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"SAVE order-1\n")

    async def shutdown():
        await asyncio.sleep(0.5)
        server.close()
        await server.wait_closed()
        db.close()

    await asyncio.wait_for(shutdown(), 20)
    reply = await asyncio.wait_for(reader.readline(), 20)
    writer.close()
    await writer.wait_closed()
    assert errors == [] and db.rows == ["order-1"], f"db closed under a running handler: {errors}"
    assert reply == b"OK\n"
