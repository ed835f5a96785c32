"""A request cancelled by its timeout leaves its reply on the connection; the next caller reads it.

Report: https://github.com/redis/redis-py/issues/2624 (also
https://github.com/redis/redis-py/issues/2665; the security advisories are CVE-2023-28858 and
CVE-2023-28859).  Paraphrase: the asyncio client wrote a command and then waited for the reply on
the same connection; when the waiting task was cancelled (here: by a per-request timeout) after the
command was sent but before the reply was read, the connection went back into use with the reply
still unread, so the *next* command on that connection received the previous command's answer (an
"off by one" that leaked one caller's data to another).

Model: a single-connection client whose ``get`` writes ``GET <key>`` and reads one reply line under
``asyncio.wait_for(..., REQUEST_TIMEOUT)``; it does not disconnect on cancellation.  The server does
SERVER_WORK seconds of I/O per request.  A timed-out request is acceptable to the caller (None); a
reply that belongs to another key is not.
"""
import asyncio

import pytest

REQUEST_TIMEOUT = 0.5
SERVER_WORK = 0.02


async def kv_server(reader, writer):
    try:
        while line := await reader.readline():
            key = line.decode().split()[1]
            await asyncio.sleep(SERVER_WORK)  # storage lookup
            writer.write(f"value-of-{key}\n".encode())
            await writer.drain()
    finally:
        writer.close()


class Client:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    async def _execute(self, command):
        self.writer.write(command.encode() + b"\n")
        await self.writer.drain()
        return (await self.reader.readline()).decode().strip()

    async def get(self, key):
        try:
            return await asyncio.wait_for(self._execute(f"GET {key}"), REQUEST_TIMEOUT)
        except asyncio.TimeoutError:
            return None  # the caller treats a timeout as a cache miss


@pytest.mark.asyncio
async def test_every_reply_belongs_to_its_own_request():
    server = await asyncio.start_server(kv_server, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    client = Client(reader, writer)
    try:
        results = {key: await client.get(key) for key in ["alice", "bob", "carol"]}
        for key, value in results.items():
            assert value in (None, f"value-of-{key}"), f"GET {key} returned {value!r}: {results}"
        assert results["carol"] is not None
    finally:
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()
