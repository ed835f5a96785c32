"""Model of aiohttp issue #7864: "Request is not cancelled on timeout, its
response is returned for the next request".

Report (paraphrased): after upgrading from 3.8.6, a service that echoes the
request body was called many times concurrently through one ``ClientSession``,
each call with a short ``timeout``.  Some calls timed out as expected, but
other calls then got a body belonging to a *different* request, e.g. call
``n=57`` received ``{"n": 12}``.  A request that timed out left its keep-alive
connection in the pool with the response still on the way.  The next request
on that connection read the old response as its own.

Model: a tiny session with a per-host keep-alive pool (one connection).
``request()`` writes the request and reads the response under
``asyncio.timeout``.  Its ``finally`` returns the connection to the pool even
when the read was interrupted.  The server echoes the request id after
``SERVER_LATENCY``.

Natural timing: ``SERVER_LATENCY`` = 0.02 s is far below ``REQUEST_TIMEOUT`` =
0.5 s, so no request times out and every body matches its request.
Bad interleaving: the first response arrives later than the timeout, or the
loop is held up long enough that the timeout callback runs before the reading
task resumes.  The first call then raises ``TimeoutError``.  Its connection
goes back to the pool with the response still unread, and the second call
returns ``{"n": 1}`` for request 2.  Expected failure: the body-matches-request
assertion fails.
"""

import asyncio
import json

import pytest

SERVER_LATENCY = 0.02
REQUEST_TIMEOUT = 0.5


class EchoServer:
    def __init__(self):
        self._tasks = set()
        self._writers = set()

    async def start(self):
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self):
        self._server.close()
        await self._server.wait_closed()
        for w in list(self._writers):
            w.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.add(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                body = await reader.readexactly(length)
                await asyncio.sleep(SERVER_LATENCY)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(asyncio.current_task())


class Session:
    def __init__(self, port):
        self.port = port
        self._idle = []
        self._all = []

    async def _acquire(self):
        if self._idle:
            return self._idle.pop()
        conn = await asyncio.open_connection("127.0.0.1", self.port)
        self._all.append(conn)
        return conn

    def _release(self, conn):
        self._idle.append(conn)

    async def put(self, payload, timeout):
        conn = await self._acquire()
        reader, writer = conn
        body = json.dumps(payload).encode()
        try:
            writer.write(b"PUT / HTTP/1.1\r\nHost: echo\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
            async with asyncio.timeout(timeout):
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                return json.loads(await reader.readexactly(length))
        finally:
            # Returned to the pool on every path, including a timeout with
            # the response still in flight.
            self._release(conn)

    async def close(self):
        for _, writer in self._all:
            writer.close()
        for _, writer in self._all:
            try:
                await writer.wait_closed()
            except ConnectionError:
                pass


@pytest.mark.asyncio
async def test_each_response_belongs_to_its_request():
    server = await EchoServer().start()
    session = Session(server.port)
    outcomes = {}
    try:
        for n in (1, 2):
            try:
                outcomes[n] = await session.put({"n": n}, timeout=REQUEST_TIMEOUT)
            except TimeoutError:
                outcomes[n] = "timeout"
    finally:
        await session.close()
        await server.close()
    for n, outcome in outcomes.items():
        if outcome != "timeout":
            assert outcome == {"n": n}, f"request {n} received the response of {outcome}"
    assert outcomes == {1: {"n": 1}, 2: {"n": 2}}
