"""Model of aiosonic issue #473 (fixed by PR #474, "Prevent Connection.close()
from being called twice").

Report (paraphrased): a crawler running about 300 concurrent requests through
aiosonic's connection pool kept failing with ``RuntimeError: readuntil() called
while another coroutine is already waiting for incoming data``.  After days of
tracing, the reporter found that a connection was being released/closed twice
from different code paths.  So the same connection went back into the pool
queue twice, and two requests then read from one socket at once.

Model: a pooled client for chunked responses.  A connection is released from
two code paths:

* when ``HttpResponse.read`` sees the last chunk, it schedules
  ``Connection.release()`` as a background task (aiosonic's create_task-based
  release);
* the response context manager's exit (``async with response``) awaits
  ``Connection.release()`` directly.

``release()`` checks ``released``, then awaits ``_finish_message()``, which
consumes the end of the chunked message ("read into the void").  Only after
that does it set the flag and put the connection back in the pool queue.  The
flag is checked before the await and set after it.

Natural timing: the server writes the final CRLF right after the last chunk
(the ``await`` between them is ``asyncio.sleep(TRAILER_DELAY)`` with 0), so the
client receives the whole message in one read.  The context-manager path
finishes ``release()`` without suspending.  The background task starts later,
sees ``released`` and returns.
Bad interleaving: the final CRLF arrives in a later read.  This happens if the
client's socket is read before the server task writes the CRLF, or if
``TRAILER_DELAY`` > 0.  The context-manager path then suspends inside
``_finish_message``, the background task passes the flag check too, and both
put the connection in the queue.  The next two concurrent requests get the
same connection.  Expected failure: the pool's "handed out twice" check fires
(``AssertionError``), or the ``readuntil()`` RuntimeError from the report.
"""

import asyncio

import pytest

TRAILER_DELAY = 0  # seconds between the last chunk and the end of the message


class ChunkedServer:
    def __init__(self):
        self._tasks = set()
        self._writers = set()
        self.connections = 0

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

    async def _compute_trailers(self):
        await asyncio.sleep(TRAILER_DELAY)
        return b""

    async def _handle(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.add(writer)
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                chunks = [path + b" part-%d;" % n for n in range(3)]
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                             + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks)
                             + b"0\r\n")
                trailers = await self._compute_trailers()
                writer.write(trailers + b"\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(asyncio.current_task())


class Connection:
    def __init__(self, pool, reader, writer):
        self.pool, self.reader, self.writer = pool, reader, writer
        self.released = True
        self.in_use = False
        self.message_finished = True
        self._finish_lock = asyncio.Lock()

    async def _finish_message(self):
        # "Read into the void": consume the end of the chunked message so the
        # next response on this connection starts cleanly.
        async with self._finish_lock:
            if not self.message_finished:
                await self.reader.readexactly(2)
                self.message_finished = True

    async def release(self):
        if self.released:
            return
        await self._finish_message()
        self.released = True
        self.pool.put(self)


class Pool:
    def __init__(self, port, size):
        self.port = port
        self.queue = asyncio.Queue()
        self.size = size
        self.created = []
        self.double_handouts = 0

    def put(self, conn):
        conn.in_use = False
        self.queue.put_nowait(conn)

    async def acquire(self):
        if self.queue.empty() and len(self.created) < self.size:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            conn = Connection(self, reader, writer)
            self.created.append(conn)
        else:
            conn = await self.queue.get()
        if conn.in_use:
            self.double_handouts += 1
            raise AssertionError("pool handed out a connection that is already in use")
        conn.in_use = True
        conn.released = False
        conn.message_finished = False
        return conn

    async def close(self):
        for conn in self.created:
            conn.writer.close()
        await asyncio.gather(*(c.writer.wait_closed() for c in self.created),
                             return_exceptions=True)


class HttpResponse:
    def __init__(self, conn):
        self.conn = conn
        self._background = set()

    async def read(self):
        body = b""
        while True:
            size = int(await self.conn.reader.readuntil(b"\r\n"), 16)
            if size == 0:
                break
            body += (await self.conn.reader.readexactly(size + 2))[:-2]
        # Body complete: give the connection back without making the caller wait.
        task = asyncio.get_running_loop().create_task(self.conn.release())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return body

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.conn.release()


class Client:
    def __init__(self, pool):
        self.pool = pool

    async def get(self, path):
        conn = await self.pool.acquire()
        conn.writer.write(f"GET {path} HTTP/1.1\r\nHost: crawl\r\n\r\n".encode())
        await conn.writer.drain()
        await conn.reader.readuntil(b"\r\n\r\n")
        return HttpResponse(conn)

    async def fetch(self, path):
        response = await self.get(path)
        async with response:
            return await response.read()


@pytest.mark.asyncio
async def test_connection_is_returned_to_the_pool_once():
    server = await ChunkedServer().start()
    pool = Pool(server.port, size=2)
    client = Client(pool)
    try:
        first = await asyncio.wait_for(client.fetch("/robots.txt"), 10)
        second, third = await asyncio.wait_for(
            asyncio.gather(client.fetch("/page/1"), client.fetch("/page/2")), 10
        )
    finally:
        await pool.close()
        await server.close()
    assert first == b"/robots.txt part-0;/robots.txt part-1;/robots.txt part-2;"
    assert second == b"/page/1 part-0;/page/1 part-1;/page/1 part-2;"
    assert third == b"/page/2 part-0;/page/2 part-1;/page/2 part-2;"
    assert pool.double_handouts == 0
    assert len(pool.created) == 2
