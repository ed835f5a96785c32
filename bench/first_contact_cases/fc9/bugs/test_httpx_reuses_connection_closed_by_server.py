"""Model of httpx issue #327: "HTTP/1.1 keep-alive connections not
reestablished if remote has gone away".

Report (paraphrased): create a client, make a request to a server, let the
server go away (restart, network drop), then make another request.  httpx's
own tests said the keep-alive connection should be transparently
re-established.  Instead the second request failed with
``ConnectionResetError``, and the h11 state was left scrambled.  The pool
handed out the pooled connection without noticing that the peer had closed it,
and nothing retried the request on a fresh connection.

Model: ``KeepAlivePool`` reuses its idle connection if *our* side of the
transport is not closing.  It does not look at whether the peer has sent EOF,
and it does not retry a request that fails on a reused connection before any
response byte.  The in-test server restarts (drops every connection, keeps
listening) ``SERVER_RESTART_AT`` seconds after it starts.

Natural timing: the client makes its second request after ``CLIENT_IDLE`` =
0.3 s, well before the restart at 1.0 s, so the pooled connection is healthy.
Bad interleaving: the client's second request is issued at or after the
restart.  This happens if the client's pause/think step takes longer, or if
the loop is held up so that the client's wake-up and the restart callback are
due in the same iteration.  The pool then hands out the dropped connection.
Expected failure: ``ConnectionResetError`` ("server closed the connection" or
"Connection reset by peer") from the second ``get``.
"""

import asyncio

import pytest

CLIENT_IDLE = 0.3
SERVER_RESTART_AT = 1.0


class RestartingServer:
    def __init__(self):
        self.generation = 1
        self.connections = 0
        self._writers = set()
        self._tasks = set()

    async def start(self):
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        self._restart = asyncio.get_running_loop().call_later(SERVER_RESTART_AT, self.restart)
        return self

    def restart(self):
        self.generation += 1
        for writer in list(self._writers):
            writer.close()

    async def close(self):
        self._restart.cancel()
        self._server.close()
        await self._server.wait_closed()
        self.restart()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.add(writer)
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                body = f"gen={self.generation} {head.split(b' ', 2)[1].decode()}".encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(asyncio.current_task())


class KeepAlivePool:
    def __init__(self, port):
        self.port = port
        self._idle = None
        self.opened = 0
        self._all = []

    async def _acquire(self):
        conn = self._idle
        self._idle = None
        if conn is not None and not conn[1].is_closing():
            return conn  # the peer may have hung up; that is not checked
        conn = await asyncio.open_connection("127.0.0.1", self.port)
        self.opened += 1
        self._all.append(conn)
        return conn

    async def get(self, path):
        reader, writer = conn = await self._acquire()
        writer.write(f"GET {path} HTTP/1.1\r\nHost: api\r\n\r\n".encode())
        await writer.drain()
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            writer.close()
            raise ConnectionResetError("server closed the connection")
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        body = (await reader.readexactly(length)).decode()
        self._idle = conn
        return body

    async def close(self):
        for _, writer in self._all:
            writer.close()
        await asyncio.gather(*(w.wait_closed() for _, w in self._all), return_exceptions=True)


@pytest.mark.asyncio
async def test_second_request_after_idle_pause_succeeds():
    server = await RestartingServer().start()
    pool = KeepAlivePool(server.port)
    try:
        first = await asyncio.wait_for(pool.get("/users/1"), 10)
        await asyncio.sleep(CLIENT_IDLE)
        second = await asyncio.wait_for(pool.get("/users/2"), 10)
    finally:
        await pool.close()
        await server.close()
    assert first.endswith("/users/1")
    assert second.endswith("/users/2")
