"""A server running in a background thread with its own event loop, and clients in the test's loop.

Libraries that offer a sync facade often use this arrangement: pytest-httpserver,
``uvicorn.Server`` in a thread for end-to-end tests, or an embedded metrics
endpoint.  The server thread owns its loop.  The test loop talks to it over
TCP, it is stopped with ``call_soon_threadsafe``, and the thread is joined.
One route calls back into the test loop with ``call_soon_threadsafe``.
"""

import asyncio
import threading
import time

import pytest


class ThreadedHTTPServer:
    def __init__(self):
        self.port = None
        self.connections = 0
        self.requests = 0
        self.notify = None  # (loop, future) set by a test
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="server-thread", daemon=True)

    def start(self):
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("server thread did not start")
        return self

    def stop(self):
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(10)
        return not self._thread.is_alive()

    def _run(self):
        asyncio.run(self._main())

    async def _main(self):
        self.loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._writers = set()
        self._tasks = set()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        await server.wait_closed()
        for writer in list(self._writers):
            writer.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.add(writer)
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                path = head.split(b" ", 2)[1].decode()
                if path == "/notify" and self.notify is not None:
                    loop, fut = self.notify
                    loop.call_soon_threadsafe(fut.set_result, threading.current_thread().name)
                if path.startswith("/sleep/"):
                    await asyncio.sleep(int(path.rsplit("/", 1)[1]) / 1000)
                body = f"{threading.current_thread().name} {path}".encode()
                self.requests += 1
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        finally:
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(asyncio.current_task())


async def fetch(reader, writer, path):
    writer.write(f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
    return (await reader.readexactly(length)).decode()


@pytest.fixture
def threaded_server():
    server = ThreadedHTTPServer().start()
    yield server
    assert server.stop(), "server thread did not exit"


async def connect(port):
    return await asyncio.open_connection("127.0.0.1", port)


async def close(writer):
    writer.close()
    try:
        await writer.wait_closed()
    except ConnectionError:
        pass


@pytest.mark.asyncio
async def test_request_is_served_by_the_server_thread(threaded_server):
    reader, writer = await connect(threaded_server.port)
    try:
        body = await asyncio.wait_for(fetch(reader, writer, "/hello"), 10)
    finally:
        await close(writer)
    assert body == "server-thread /hello"
    assert threading.current_thread().name != "server-thread"


@pytest.mark.asyncio
async def test_keepalive_connection_across_client_sleeps(threaded_server):
    reader, writer = await connect(threaded_server.port)
    try:
        bodies = []
        for n in range(3):
            bodies.append(await asyncio.wait_for(fetch(reader, writer, f"/sleep/{50 * n}"), 10))
            await asyncio.sleep(0.5)
    finally:
        await close(writer)
    assert bodies == [f"server-thread /sleep/{50 * n}" for n in range(3)]
    assert threaded_server.connections == 1


@pytest.mark.asyncio
async def test_server_thread_calls_back_into_test_loop(threaded_server):
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    threaded_server.notify = (loop, fut)
    reader, writer = await connect(threaded_server.port)
    try:
        body = await asyncio.wait_for(fetch(reader, writer, "/notify"), 10)
        name = await asyncio.wait_for(fut, 10)
    finally:
        await close(writer)
    assert name == "server-thread"
    assert body == "server-thread /notify"


@pytest.mark.asyncio
async def test_many_clients_from_the_test_loop(threaded_server):
    async def client(n):
        reader, writer = await connect(threaded_server.port)
        try:
            first = await fetch(reader, writer, f"/c{n}/1")
            await asyncio.sleep(0.5)
            second = await fetch(reader, writer, f"/sleep/{20 * n}")
            return first, second
        finally:
            await close(writer)

    started = time.monotonic()
    results = await asyncio.wait_for(asyncio.gather(*(client(n) for n in range(5))), 20)
    assert time.monotonic() - started >= 0.5 - 0.01
    assert [r[0] for r in results] == [f"server-thread /c{n}/1" for n in range(5)]
    assert threaded_server.connections == 5
    assert threaded_server.requests == 10


@pytest.mark.asyncio
async def test_stopping_the_thread_closes_idle_connections(threaded_server):
    reader, writer = await connect(threaded_server.port)
    try:
        assert await asyncio.wait_for(fetch(reader, writer, "/x"), 10) == "server-thread /x"
        # Stopping joins the thread; run it off the loop so the loop stays free.
        stopped = await asyncio.wait_for(asyncio.to_thread(threaded_server.stop), 30)
        assert stopped
        assert await asyncio.wait_for(reader.read(), 10) == b""
    finally:
        await close(writer)
