"""Ping watchdog declares the peer dead although its PONG had arrived: the PONG sits in the
inbox behind a slow event handler that the reader awaits inline.

Report: https://github.com/miguelgrinberg/python-socketio/issues/233 ("Strange behaviours when
pingInterval > pingTimeout", problem 3). Paraphrase: with an async event handler that takes a
while, the asyncio client's read loop awaited the handler before reading the next packet, so the
server's PONG was not processed in time and the ping task aborted the connection with "PONG
response has not been received". The fix dispatches handlers as background tasks.

Model: the client sends PING at t=0 and gives the server 0.5 s. The server answers with an event
MESSAGE at 0.05 s (its handler does 0.02 s of I/O) and the PONG at 0.1 s. The reader task handles
packets one at a time and awaits the handler inline.
"""

import asyncio

import pytest

MESSAGE_AT = 0.05
PONG_AT = 0.10
HANDLER_IO = 0.02
PING_TIMEOUT = 0.5


class Client:
    def __init__(self):
        self.inbox = asyncio.Queue()
        self.pong_at = None
        self.handled = []
        self.disconnect_reason = None

    async def handler(self, payload):
        await asyncio.sleep(HANDLER_IO)  # e.g. writes the event to a database
        self.handled.append(payload)

    async def read_loop(self):
        loop = asyncio.get_running_loop()
        while True:
            kind, payload = await self.inbox.get()
            if kind == "PONG":
                self.pong_at = loop.time()
            elif kind == "MESSAGE":
                await self.handler(payload)  # inline: later packets wait for it

    async def ping_once(self):
        self.pong_at = None
        # (PING is "sent" here; the server's answers are scheduled by the test)
        await asyncio.sleep(PING_TIMEOUT)
        if self.pong_at is None:
            self.disconnect_reason = "PONG response has not been received"


@pytest.mark.asyncio
async def test_pong_that_arrived_keeps_the_connection():
    loop = asyncio.get_running_loop()
    client = Client()
    reader = asyncio.create_task(client.read_loop())
    t0 = loop.time()
    loop.call_at(t0 + MESSAGE_AT, client.inbox.put_nowait, ("MESSAGE", "doThing"))
    loop.call_at(t0 + PONG_AT, client.inbox.put_nowait, ("PONG", None))
    try:
        await asyncio.wait_for(client.ping_once(), 5)
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
    assert client.disconnect_reason is None, (
        f"disconnected ({client.disconnect_reason}) although the PONG arrived at t={PONG_AT}s"
    )
