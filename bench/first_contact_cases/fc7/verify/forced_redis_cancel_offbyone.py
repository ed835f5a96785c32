"""Cancelled command leaves its reply unread; the next command reads it (off by one).

Report: https://github.com/redis/redis-py/issues/2624 (follow-up #2665; the
ChatGPT-outage bug; partial fix PR #2641).

Race: ``execute_command`` writes the command to the socket, then awaits the
reply.  If the caller's timeout/cancellation lands after the write but before
the reply is read, CancelledError propagates and the connection is kept as if
it were clean.  The reply of the cancelled command stays in the connection's
read buffer, so the next command on that connection receives the previous
command's answer.
Shared state: the connection's pending-reply stream (``Connection._replies``);
the await is ``await self._replies.get()`` after ``send``.

Under plain pytest the fake server answers in 5 ms and the caller's timeout is
100 ms, so the cancellation never lands inside the window.
"""
import asyncio

import pytest

EXPECTED = {"cause": "cancel_ordering", "resource": "_replies"}


class FakeServer:
    def __init__(self, data, latency):
        self.data = data
        self.latency = latency

    async def handle(self, inbox, replies):
        while True:
            cmd, key = await inbox.get()
            await asyncio.sleep(self.latency)
            replies.put_nowait(self.data.get(key) if cmd == "GET" else "PONG")


class Connection:
    def __init__(self, server):
        self._inbox = asyncio.Queue()
        self._replies = asyncio.Queue()
        self._task = asyncio.create_task(server.handle(self._inbox, self._replies))

    async def send(self, *cmd):
        await asyncio.sleep(0)  # socket write
        self._inbox.put_nowait(cmd)

    async def execute_command(self, *cmd):
        await self.send(*cmd)
        return await self._replies.get()  # BUG: no cleanup if cancelled here

    def close(self):
        self._task.cancel()


@pytest.mark.asyncio
async def test_forced_reply_belongs_to_its_command():
    server = FakeServer({"foo": "foo-value", "bar": "bar-value"}, latency=0.2)
    conn = Connection(server)
    try:
        try:
            await asyncio.wait_for(conn.execute_command("GET", "foo"), timeout=0.1)
        except asyncio.TimeoutError:
            pass  # a slow GET is tolerated by the application
        assert await asyncio.wait_for(conn.execute_command("GET", "bar"), 1) == "bar-value"
        assert await asyncio.wait_for(conn.execute_command("PING", None), 1) == "PONG"
    finally:
        conn.close()
