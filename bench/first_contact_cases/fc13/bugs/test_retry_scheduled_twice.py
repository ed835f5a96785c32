"""A reconnect retry is scheduled twice when a second failure callback lands in the backoff window.

Reports: https://github.com/fdebrus/Nikobus-HA/pull/341 ("Coalesce concurrent
_handle_connection_lost calls"), https://github.com/miguelgrinberg/python-socketio/pull/1369
("Prevent multiple tasks for reconnection", discussion #1367); the same pattern outside asyncio:
https://github.com/mnot/thor/pull/96. Paraphrase: after a connection loss had scheduled a
reconnect, a second loss notification for the same failure (the old connection's pending read
failing, or a close callback after an error callback) arrived while that reconnect was still
pending or just starting, and scheduled another one: two reconnect attempts ran in parallel and
the attempt counter advanced twice. The fixes remember that a reconnect is pending/running and
coalesce later notifications into it.

Model: a client whose first connect fails after a 0.05 s I/O step; the retry (backoff 0.1 s)
reconnects. The previous connection's close notification arrives at 0.25 s and is ignored if a
connection attempt is running or done - but nothing checks for a retry that is still pending.
"""

import asyncio

import pytest

FIRST_CONNECT_IO = 0.05   # the failing first connect
CONNECT_IO = 0.05         # later connects succeed after this
BACKOFF = 0.1
CLOSE_NOTICE_AT = 0.25    # the old connection's close notification


class Client:
    def __init__(self):
        self.loop = asyncio.get_running_loop()
        self.retry_handle = None
        self.connecting = False
        self.connected = False
        self.attempts = 0
        self.opened = 0
        self.tasks = set()

    def schedule_retry(self):
        if self.connecting or self.connected:
            return
        # (the fix: "if self.retry_handle is not None: return")
        self.retry_handle = self.loop.call_later(BACKOFF, self._retry)

    def _retry(self):
        self.retry_handle = None
        task = self.loop.create_task(self.connect())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def connect(self):
        self.connecting = True
        self.attempts += 1
        first = self.attempts == 1
        try:
            await asyncio.sleep(FIRST_CONNECT_IO if first else CONNECT_IO)
            if first:
                raise ConnectionRefusedError("server restarting")
        except ConnectionError:
            self.connecting = False
            self.on_connect_error()
            return
        self.connecting = False
        self.connected = True
        self.opened += 1

    def on_connect_error(self):
        self.schedule_retry()

    def on_closed(self):
        self.schedule_retry()


@pytest.mark.asyncio
async def test_one_retry_per_failure():
    client = Client()
    notice = client.loop.call_later(CLOSE_NOTICE_AT, client.on_closed)
    try:
        await client.connect()
        await asyncio.sleep(CLOSE_NOTICE_AT + 0.05)
        while client.tasks or client.retry_handle is not None:
            if client.tasks:
                await asyncio.wait_for(asyncio.gather(*client.tasks), 5)
            else:
                await asyncio.sleep(0.01)
    finally:
        notice.cancel()
        if client.retry_handle is not None:
            client.retry_handle.cancel()
    assert client.connected
    assert client.attempts == 2, f"{client.attempts} connection attempts for one failure"
    assert client.opened == 1, f"{client.opened} connections opened"
