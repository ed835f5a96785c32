"""Model of redis-py's asyncio client leaving a connection "off by one" after a
cancelled command.

Report: https://github.com/redis/redis-py/issues/2624
("Off by 1 - Canceling async Redis command leaves connection open, in unsafe
state for future commands").

Paraphrase of the report: if an async command is cancelled after it has been
written to the socket but before its reply was read and parsed, the connection
goes back into use with that reply still unread.  The next command on the same
connection sends its request and then reads the *previous* command's reply, and
every later command stays shifted by one.  A timeout around a command (which is
implemented by cancelling it) is enough to trigger it.

The model keeps a single-connection client whose ``execute`` writes a command
and then awaits the next reply from the connection's read buffer, with no
clean-up on cancellation.  The test wraps a ``GET`` in a 250 ms timeout (a
cache lookup that falls back on timeout) and then reads another key.  The fake
server answers in ~5 ms, so normally the timeout never fires.  If the server's
reply step takes longer than the timeout, the ``GET`` is cancelled with its
reply still pending, and the following ``GET bar`` returns ``foo``'s value.
"""

import asyncio

import pytest

EXPECTED = {"cause": "cancelled_handoff", "resource": "Connection read buffer (pending reply)"}

SERVER_LATENCY = 0.005
LOOKUP_TIMEOUT = 0.25


class FakeRedisServer:
    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def execute(self, cmd: str, *args: str):
        if cmd == "SET":
            self.data[args[0]] = args[1]
            return "OK"
        if cmd == "GET":
            return self.data.get(args[0])
        raise ValueError(cmd)


class Connection:
    def __init__(self, server: FakeRedisServer) -> None:
        self._server = server
        self._inbox: asyncio.Queue[tuple] = asyncio.Queue()
        self._replies: asyncio.Queue = asyncio.Queue()  # the socket's read buffer
        self._task = asyncio.create_task(self._serve())

    async def _serve(self) -> None:
        while True:
            command = await self._inbox.get()
            await asyncio.sleep(SERVER_LATENCY)  # network + server processing
            self._replies.put_nowait(self._server.execute(*command))

    async def send_command(self, *command: str) -> None:
        self._inbox.put_nowait(command)
        await asyncio.sleep(0)  # socket write / drain

    async def read_response(self):
        return await self._replies.get()

    async def close(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


class Redis:
    """single_connection_client=True style client."""

    def __init__(self, server: FakeRedisServer) -> None:
        self.connection = Connection(server)
        self._lock = asyncio.Lock()

    async def execute_command(self, *command: str):
        async with self._lock:
            await self.connection.send_command(*command)
            # BUG (as reported): if cancelled here the reply stays in the buffer
            # and the connection is reused as if nothing happened.
            return await self.connection.read_response()

    async def set(self, key: str, value: str):
        return await self.execute_command("SET", key, value)

    async def get(self, key: str):
        return await self.execute_command("GET", key)

    async def aclose(self) -> None:
        await self.connection.close()


@pytest.mark.asyncio
async def test_timed_out_lookup_does_not_shift_later_replies():
    r = Redis(FakeRedisServer())
    try:
        assert await r.set("foo", "foo-value") == "OK"
        assert await r.set("bar", "bar-value") == "OK"

        try:
            cached = await asyncio.wait_for(r.get("foo"), timeout=LOOKUP_TIMEOUT)
        except asyncio.TimeoutError:
            cached = None  # treat a slow cache as a miss
        assert cached in ("foo-value", None)

        assert await asyncio.wait_for(r.get("bar"), timeout=5) == "bar-value"
    finally:
        await r.aclose()
