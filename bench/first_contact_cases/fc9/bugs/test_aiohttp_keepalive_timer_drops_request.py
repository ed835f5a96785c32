"""Model of aiohttp issue #9138: the server keep-alive timer closes a connection
whose next request has already arrived (fixed by aiohttp PR #9140).

Report (paraphrased): with aiohttp 3.9.2 and 3.10.5, a server with a 1 s
``keepalive_timeout`` occasionally dropped keep-alive connections that were
actively in use.  Clients saw "server disconnected" errors.  The server's
request handler is a ``Protocol``.  ``data_received`` queues the parsed message
and wakes the handler task, but the handler only clears its "waiting for the
next message" marker when it resumes.  The keep-alive callback decides that the
connection is idle by looking at that marker.  If the callback runs after the
bytes were received but before the handler task resumes, it closes the transport.
The request the server had already read is then dropped.

Model: ``RequestHandler`` below has the same split between ``data_received``,
the handler task and a ``call_later`` keep-alive callback.  The client is
careful: if a reused connection dies before any response byte arrives, it
retries once on a new connection.  A legitimate idle close therefore does not
fail the test.  The test fails only if the server drops a request it had
already received.

Natural timing: the client reuses the connection after ``CLIENT_IDLE`` = 0.3 s,
long before ``KEEPALIVE_TIMEOUT`` = 1.0 s, so the request is processed first.
Bad interleaving: the loop gets round to the client's request only when the
1.0 s timer is also due (for example, the loop is held up for about 0.7 s right
after the client writes).  Asyncio then runs the socket callback
(``data_received``), then the timer (``_process_keepalive`` sees the handler
still parked and closes), and only then the handler task's wake-up.
"""

import asyncio
import collections

import pytest

KEEPALIVE_TIMEOUT = 1.0
CLIENT_IDLE = 0.3


class Server:
    def __init__(self):
        self.handlers = []
        self.served = []
        self.dropped = []


class RequestHandler(asyncio.Protocol):
    def __init__(self, server):
        self.server = server
        self._buffer = b""
        self._messages = collections.deque()
        self._waiter = None
        self._keepalive_handle = None
        self._task = None
        self.transport = None

    # --- protocol callbacks -------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        self.server.handlers.append(self)
        self._task = asyncio.get_running_loop().create_task(self.start())

    def data_received(self, data):
        self._buffer += data
        while b"\r\n\r\n" in self._buffer:
            head, self._buffer = self._buffer.split(b"\r\n\r\n", 1)
            self._messages.append(head.split(b" ", 2)[1].decode())
        if self._messages and self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def connection_lost(self, exc):
        if self._keepalive_handle is not None:
            self._keepalive_handle.cancel()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.cancel()
        self.server.dropped.extend(self._messages)
        self._messages.clear()

    def _process_keepalive(self):
        self._keepalive_handle = None
        # The handler is "idle" when it is parked on its waiter.  It is not
        # checked whether that waiter has already been woken by data_received.
        if self._waiter is not None:
            self.transport.close()

    # --- handler task ---------------------------------------------------------
    async def start(self):
        loop = asyncio.get_running_loop()
        while not self.transport.is_closing():
            while not self._messages:
                self._waiter = loop.create_future()
                try:
                    await self._waiter
                except asyncio.CancelledError:
                    return
                finally:
                    self._waiter = None
                if self.transport.is_closing():
                    return
            if self._keepalive_handle is not None:
                self._keepalive_handle.cancel()
                self._keepalive_handle = None
            path = self._messages.popleft()
            await asyncio.sleep(0.01)  # the application handler
            body = f"handled {path}".encode()
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            self.server.served.append(path)
            self._keepalive_handle = loop.call_later(KEEPALIVE_TIMEOUT, self._process_keepalive)


class Client:
    def __init__(self, port):
        self.port = port
        self.conn = None
        self.retries = 0

    async def _open(self):
        self.conn = await asyncio.open_connection("127.0.0.1", self.port)

    async def get(self, path):
        reused = self.conn is not None
        if not reused:
            await self._open()
        try:
            return await self._roundtrip(path)
        except ConnectionError:
            if not reused:
                raise
            self.conn[1].close()
            self.retries += 1
            await self._open()
            return await self._roundtrip(path)

    async def _roundtrip(self, path):
        reader, writer = self.conn
        writer.write(f"GET {path} HTTP/1.1\r\nHost: app\r\n\r\n".encode())
        await writer.drain()
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            raise ConnectionResetError("server closed the connection without a response")
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        return (await reader.readexactly(length)).decode()

    async def close(self):
        if self.conn is not None:
            self.conn[1].close()
            await self.conn[1].wait_closed()


@pytest.mark.asyncio
async def test_keepalive_timer_never_drops_a_received_request():
    loop = asyncio.get_running_loop()
    state = Server()
    server = await loop.create_server(lambda: RequestHandler(state), "127.0.0.1", 0)
    client = Client(server.sockets[0].getsockname()[1])
    try:
        assert await asyncio.wait_for(client.get("/first"), 10) == "handled /first"
        await asyncio.sleep(CLIENT_IDLE)
        assert await asyncio.wait_for(client.get("/second"), 10) == "handled /second"
    finally:
        await client.close()
        server.close()
        for handler in state.handlers:
            handler.transport.close()
        await server.wait_closed()
        await asyncio.gather(*(h._task for h in state.handlers), return_exceptions=True)
    assert state.dropped == [], f"server dropped requests it had received: {state.dropped}"
    assert state.served == ["/first", "/second"]
