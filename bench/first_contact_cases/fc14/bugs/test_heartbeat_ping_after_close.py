"""A heartbeat ping scheduled in the same loop iteration as close() writes to a closing transport.

Report: https://github.com/aio-libs/aiohttp/issues/5766 ("The heartbeat call to ping() sometimes
occurs after the transport is closing"); the same symptom, "Cannot write to closing transport" from
a keep-alive ping, was fixed downstream in
https://github.com/home-assistant-libs/aioshelly/pull/340. Paraphrase: the websocket client's
heartbeat timer callback checks that the socket is not closed and then fires off a task that sends
the ping.  If the application closes the connection after that check but before the ping task runs,
the ping is written to a closing transport and the fire-and-forget task fails with
ConnectionResetError("Cannot write to closing transport").

Model: heartbeat every HEARTBEAT seconds via loop.call_later, ping sent from a separate task
(pre-fix logic); the application works for WORK seconds and then closes.
"""
import asyncio
import struct

import pytest

HEARTBEAT = 0.2
WORK = 0.5
PING, PONG, CLOSE = 0x9, 0xA, 0x8


def frame(opcode, payload=b""):
    return struct.pack("!BI", opcode, len(payload)) + payload


class HeartbeatClient:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.loop = asyncio.get_running_loop()
        self.closed = False
        self.ping_tasks = []
        self._handle = self.loop.call_later(HEARTBEAT, self._send_heartbeat)

    def _send_heartbeat(self):
        if not self.closed:
            # fire-and-forget, as in the report
            self.ping_tasks.append(self.loop.create_task(self._ping()))
            self._handle = self.loop.call_later(HEARTBEAT, self._send_heartbeat)

    async def _ping(self):
        if self.writer.transport.is_closing():
            raise ConnectionResetError("Cannot write to closing transport")
        self.writer.write(frame(PING, b"hb"))
        await self.writer.drain()

    async def close(self):
        self.closed = True
        self._handle.cancel()
        self.writer.write(frame(CLOSE, struct.pack("!H", 1000)))
        self.writer.close()
        await self.writer.wait_closed()


async def pong_server(reader, writer):
    try:
        while True:
            try:
                opcode, size = struct.unpack("!BI", await reader.readexactly(5))
                payload = await reader.readexactly(size)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if opcode == PING:
                writer.write(frame(PONG, payload))
            elif opcode == CLOSE:
                return
    finally:
        writer.close()


@pytest.mark.asyncio
async def test_no_heartbeat_is_written_after_close():
    server = await asyncio.start_server(pong_server, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    client = HeartbeatClient(reader, writer)
    try:
        await asyncio.sleep(WORK)  # the application uses the connection
        await client.close()
        results = await asyncio.wait_for(
            asyncio.gather(*client.ping_tasks, return_exceptions=True), 5)
        errors = [r for r in results if isinstance(r, BaseException)]
        assert not errors, f"heartbeat failed after close: {errors!r}"
    finally:
        writer.close()
        server.close()
        await server.wait_closed()
