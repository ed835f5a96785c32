"""A pooled keep-alive connection is handed out in the instant the server closes it as idle.

Report: https://github.com/aio-libs/aiohttp/issues/3507 (keep-alive connections closed by the server
right after a response were reused from the pool and failed with ServerDisconnectedError /
ClientOSError); the same family is discussed in https://github.com/aio-libs/aiohttp/issues/850.
Paraphrase: the client pool checks that a connection is still open when it checks it out, but the
server may be closing it at that very moment (its keep-alive idle timer); the check passes, the
request is written, and the reply is "server disconnected".  The pre-fix client did not retry a
request that failed on a *reused* connection before any byte of the reply arrived.

Model: a line server that closes a connection after SERVER_IDLE seconds without a request; a pool
that discards connections whose EOF it has already seen; a client that thinks for CLIENT_THINK
seconds between two requests and does not retry.
"""
import asyncio

import pytest

SERVER_IDLE = 0.3     # server's keep-alive idle timeout
CLIENT_THINK = 0.1    # client's I/O between its two requests


async def keepalive_server(reader, writer):
    try:
        while True:
            try:
                line = await asyncio.wait_for(reader.readline(), SERVER_IDLE)
            except asyncio.TimeoutError:
                return  # idle too long: close the keep-alive connection
            if not line:
                return
            writer.write(b"OK " + line)
            await writer.drain()
    finally:
        writer.close()


class Pool:
    def __init__(self, port):
        self.port = port
        self.idle = []
        self.opened = []

    async def acquire(self):
        while self.idle:
            reader, writer = self.idle.pop()
            if reader.at_eof() or writer.is_closing():
                writer.close()  # the server already closed it: never hand it out
                continue
            return reader, writer
        conn = await asyncio.open_connection("127.0.0.1", self.port)
        self.opened.append(conn[1])
        return conn

    def release(self, conn):
        self.idle.append(conn)

    async def close(self):
        for w in self.opened:
            w.close()
        for w in self.opened:
            try:
                await w.wait_closed()
            except (ConnectionError, OSError):
                pass


async def request(pool, text):
    reader, writer = await pool.acquire()
    writer.write(text.encode() + b"\n")
    await writer.drain()
    reply = await reader.readline()
    if not reply:
        raise ConnectionResetError(f"server disconnected while answering {text!r}")
    pool.release((reader, writer))
    return reply.decode().strip()


@pytest.mark.asyncio
async def test_second_request_on_a_pooled_connection():
    server = await asyncio.start_server(keepalive_server, "127.0.0.1", 0)
    pool = Pool(server.sockets[0].getsockname()[1])
    try:
        assert await asyncio.wait_for(request(pool, "first"), 5) == "OK first"
        await asyncio.sleep(CLIENT_THINK)
        assert await asyncio.wait_for(request(pool, "second"), 5) == "OK second"
    finally:
        await pool.close()
        server.close()
        await server.wait_closed()
