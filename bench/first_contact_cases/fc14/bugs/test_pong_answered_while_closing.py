"""A Ping that crosses our Close frame is answered with a Pong in the CLOSING state.

Report: https://github.com/python-websockets/websockets/pull/1429 ("Only send pong if OPEN").
Paraphrase from the maintainer's description: we send a Close frame and move to CLOSING; the peer,
which has not seen our Close yet, sends a Ping; our receive path answers every Ping with a Pong
through the normal send path, which refuses to send in the CLOSING state, so the receiving side
crashes and the closing handshake is not completed.  RFC 6455 allows skipping the Pong once a Close
has been sent.  Whether it happens depends only on whether the peer's Ping and our Close cross on
the wire.

Model: a tiny frame protocol (1-byte opcode + 4-byte length).  The server pings at PING_AT; the
client finishes its work and closes at CLOSE_AT.  The client's reader answers Pings with the pre-fix
logic.
"""
import asyncio
import struct

import pytest

PING_AT = 0.1
CLOSE_AT = 0.3
PING, PONG, CLOSE = 0x9, 0xA, 0x8


def frame(opcode, payload=b""):
    return struct.pack("!BI", opcode, len(payload)) + payload


async def read_frame(reader):
    try:
        opcode, size = struct.unpack("!BI", await reader.readexactly(5))
        return opcode, await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        return None


class InvalidState(Exception):
    pass


class Client:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.state = "OPEN"
        self.close_code = None
        self.task = asyncio.create_task(self._read_loop())

    def send_frame(self, opcode, payload=b""):
        if self.state != "OPEN" and opcode != CLOSE:
            raise InvalidState(f"cannot write to a WebSocket in the {self.state} state")
        self.writer.write(frame(opcode, payload))

    async def _read_loop(self):
        while (f := await read_frame(self.reader)) is not None:
            opcode, payload = f
            if opcode == PING:
                self.send_frame(PONG, payload)  # pre-fix: answered whatever the state
            elif opcode == CLOSE:
                self.close_code = struct.unpack("!H", payload)[0]
                self.state = "CLOSED"
                return

    async def close(self):
        self.state = "CLOSING"
        self.send_frame(CLOSE, struct.pack("!H", 1000))
        await asyncio.wait_for(self.task, 5)  # re-raises whatever stopped the reader
        self.writer.close()
        await self.writer.wait_closed()


async def server_handler(reader, writer):
    async def pinger():
        await asyncio.sleep(PING_AT)
        writer.write(frame(PING, b"keep"))

    ping_task = asyncio.create_task(pinger())
    try:
        while (f := await read_frame(reader)) is not None:
            if f[0] == CLOSE:
                writer.write(frame(CLOSE, f[1]))  # echo the Close, then end the connection
                await writer.drain()
                break
    finally:
        ping_task.cancel()
        writer.close()


@pytest.mark.asyncio
async def test_close_handshake_with_a_ping_in_flight():
    server = await asyncio.start_server(server_handler, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    client = Client(reader, writer)
    try:
        await asyncio.sleep(CLOSE_AT)  # the application's own work on the connection
        await client.close()
        assert client.close_code == 1000
    finally:
        client.task.cancel()
        writer.close()
        server.close()
        await server.wait_closed()
