"""A single-connection async key-value client shaped like redis-py's before its 4.5.4 fix.

A command writes its request, then reads the reply. A command cancelled between the two (a caller's
timeout) leaves its reply unread on the connection; the next command reads that stale reply as its
own, and the connection stays one reply behind from then on.
"""

import asyncio
import random


class FakeServer:
    """Answers each request after a random delay, in order, on the connection it came from."""

    def __init__(self) -> None:
        self.data: dict = {}
        self._last: dict = {}

    def submit(self, replies: asyncio.Queue, command: tuple) -> None:
        name, *args = command
        if name == "SET":
            self.data[args[0]] = args[1]
            reply = "OK"
        else:
            reply = self.data.get(args[0])
        delay = random.uniform(0, 0.004)
        # Replies on one connection leave in request order, like a TCP stream.
        start = self._last.get(id(replies))
        self._last[id(replies)] = asyncio.ensure_future(self._answer(start, delay, replies, reply))

    async def _answer(self, before, delay: float, replies: asyncio.Queue, reply) -> None:
        if before is not None:
            await before
        await asyncio.sleep(delay)
        replies.put_nowait(reply)


class Connection:
    def __init__(self, server: FakeServer) -> None:
        self._server = server
        self._replies: asyncio.Queue = asyncio.Queue()

    def send_command(self, *command) -> None:
        self._server.submit(self._replies, command)

    async def read_response(self):
        return await self._replies.get()

    def disconnect(self) -> None:
        # A new socket: whatever the server still sends on the old one is never read.
        self._replies = asyncio.Queue()


class Redis:
    def __init__(self, server: FakeServer) -> None:
        self._conn = Connection(server)

    async def execute_command(self, *command):
        self._conn.send_command(*command)
        return await self._conn.read_response()

    async def set(self, key: str, value: str):
        return await self.execute_command("SET", key, value)

    async def get(self, key: str):
        return await self.execute_command("GET", key)
