"""Model of python-websockets issue #320: "Any idea what might cause 'Cannot call
write() after write_eof()'?".

Report (paraphrased): production servers occasionally logged
``RuntimeError: Cannot call write() after write_eof()`` from ``send()``.  The
maintainer's analysis was that the library tracked the connection only through
``self.state``, which is not accurate around state transitions.  When the
connection is being torn down, the closing code half-closes the transport
and then yields to the event loop several times while waiting for the TCP
connection to end.  The state stays OPEN throughout, so a concurrent
``send()`` passes its ``state`` check and calls ``transport.write()`` after
``write_eof()``.  The application expected ``ConnectionClosed``, which it
handles.  It got a ``RuntimeError`` instead.

Model: a line-framed WebSocket-like connection.  When the reader task gets the
peer's CLOSE frame, it echoes CLOSE, calls ``write_eof()``, and waits up to
``CLOSE_TIMEOUT`` for the server to drop TCP.  Only then does it set
``state = CLOSED``.  ``send()`` raises ``ConnectionClosed`` only when
``state`` is not OPEN.  The server sends one job, starts its shutdown with a
CLOSE frame after ``SERVER_SHUTDOWN_AFTER``, and closes TCP ``SERVER_LINGER``
after the client's CLOSE echo.

Natural timing: the client processes the job in ``PROCESS_TIME`` = 0.01 s and
sends its result long before the server starts closing at 0.2 s.
Bad interleaving: processing takes longer (about 0.25 s), so ``send()`` lands
between ``write_eof()`` and the end of the closing handshake.  Expected
failure: ``RuntimeError: Cannot call write() after write_eof()`` escapes from
the application task, where the test expects either a delivered result or a
handled ``ConnectionClosed``.
"""

import asyncio
import enum

import pytest

PROCESS_TIME = 0.01
SERVER_SHUTDOWN_AFTER = 0.2
SERVER_LINGER = 0.3
CLOSE_TIMEOUT = 5.0


class State(enum.Enum):
    OPEN = 1
    CLOSED = 3


class ConnectionClosed(Exception):
    pass


class JobServer:
    def __init__(self):
        self.results = []
        self._tasks = set()

    async def start(self):
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self):
        self._server.close()
        await self._server.wait_closed()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        try:
            writer.write(b"TEXT job-1\n")
            await writer.drain()
            shutdown = asyncio.get_running_loop().call_later(
                SERVER_SHUTDOWN_AFTER, writer.write, b"CLOSE 1001\n"
            )
            try:
                while line := await reader.readline():
                    kind, _, payload = line.decode().rstrip("\n").partition(" ")
                    if kind == "TEXT":
                        self.results.append(payload)
                    elif kind == "CLOSE":
                        await asyncio.sleep(SERVER_LINGER)  # finish cleanup, then drop TCP
                        break
            finally:
                shutdown.cancel()
        except ConnectionError:
            pass
        finally:
            writer.close()
            self._tasks.discard(asyncio.current_task())


class ClientConnection:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.state = State.OPEN
        self.messages = asyncio.Queue()
        self.reader_task = asyncio.get_running_loop().create_task(self._read_frames())

    @classmethod
    async def connect(cls, port):
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def send(self, text):
        if self.state is not State.OPEN:
            raise ConnectionClosed(self.state)
        self.writer.write(f"TEXT {text}\n".encode())
        await self.writer.drain()

    async def __aiter__(self):
        while True:
            item = await self.messages.get()
            if item is None:
                return
            yield item

    async def _read_frames(self):
        try:
            while line := await self.reader.readline():
                kind, _, payload = line.decode().rstrip("\n").partition(" ")
                if kind == "TEXT":
                    self.messages.put_nowait(payload)
                elif kind == "CLOSE":
                    await self._close_connection(payload)
                    return
        finally:
            self.state = State.CLOSED
            self.messages.put_nowait(None)

    async def _close_connection(self, code):
        # Echo the close frame and half-close, then wait for the server to
        # drop TCP.  The state is updated only at the very end.
        self.writer.write(f"CLOSE {code}\n".encode())
        self.writer.write_eof()
        try:
            await asyncio.wait_for(self.reader.read(), CLOSE_TIMEOUT)
        except (asyncio.TimeoutError, ConnectionError):
            pass
        self.writer.close()
        self.state = State.CLOSED

    async def wait_closed(self):
        await asyncio.gather(self.reader_task, return_exceptions=True)
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass


@pytest.mark.asyncio
async def test_send_racing_server_close_raises_connection_closed_or_succeeds():
    server = await JobServer().start()
    conn = await ClientConnection.connect(server.port)
    delivered, dropped = [], []

    async def worker():
        async for job in conn:
            await asyncio.sleep(PROCESS_TIME)  # do the work
            result = f"{job}:done"
            try:
                await conn.send(result)
                delivered.append(result)
            except ConnectionClosed:
                dropped.append(result)  # acceptable: the server is going away

    try:
        await asyncio.wait_for(worker(), 10)
    finally:
        await conn.wait_closed()
        await server.close()
    assert delivered + dropped == ["job-1:done"]
    assert server.results == delivered
