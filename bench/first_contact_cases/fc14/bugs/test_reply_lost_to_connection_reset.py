"""connection_lost(ConnectionResetError) overtakes a reply that is already in the StreamReader.

Report: https://github.com/python/cpython/issues/75044 ("StreamReader does not return remaining and
ready data buffer before raise the Exception", migrated from bugs.python.org, still open).
Paraphrase: a Redis server at its client limit answers "-ERR max number of clients reached" and
resets the connection. Whether the asyncio client gets to read that error message depends on timing:
if the reset is processed before the client's read, StreamReaderProtocol.connection_lost() stores
the ConnectionResetError in the StreamReader, and read()/readline() raise it even though the reply
bytes are sitting in the buffer, so the reason for the rejection is lost.  (Uses stock 3.11
``StreamReader`` behaviour.)

Model: a server that rejects the connection with one line, spends SERVER_LINGER seconds logging the
rejection, then resets (SO_LINGER 0).  The client sends its greeting, spends CLIENT_SETUP seconds on
its own setup, then reads the server's answer.
"""
import asyncio
import contextlib
import socket
import struct

import pytest

SERVER_LINGER = 0.2
CLIENT_SETUP = 0.02


async def rejecting_server(reader, writer):
    await reader.readline()
    writer.write(b"-ERR max number of clients reached\r\n")
    await writer.drain()
    await asyncio.sleep(SERVER_LINGER)  # audit-log the rejection
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.close()  # with SO_LINGER 0: RST instead of FIN


@pytest.mark.asyncio
async def test_client_reads_the_rejection_reason():
    server = await asyncio.start_server(rejecting_server, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    try:
        writer.write(b"HELLO 3\r\n")
        await writer.drain()
        await asyncio.sleep(CLIENT_SETUP)  # e.g. the client prepares its parser / auth data
        line = await asyncio.wait_for(reader.readline(), 5)
        assert line == b"-ERR max number of clients reached\r\n"
        with contextlib.suppress(ConnectionError):  # then the reset ends the connection
            assert await asyncio.wait_for(reader.read(), 5) == b""
    finally:
        writer.close()
        server.close()
        await server.wait_closed()
