"""Two tasks wait in drain() on one paused connection: a flow-control mixin with one waiter slot.

Report: https://github.com/python/cpython/issues/74116 (bpo-29930, "Waiting for
asyncio.StreamWriter.drain() twice in parallel raises an AssertionError when the transport stopped
writing"; fixed in 2022 by https://github.com/python/cpython/pull/94705; the same crash was reported
from websockets, https://github.com/python-websockets/websockets/issues/16, and from FAForever's
server broadcast, https://github.com/FAForever/server/pull/522). Paraphrase: the pre-fix
flow-control helper kept a single drain waiter; a second task calling drain() while the transport
was still paused hit ``assert waiter is None or waiter.cancelled()``. It only happens when two
writers find the transport paused at the same time.

Model: a Protocol re-implementing the pre-fix single-slot drain.  Writer A sends 256 KiB at once and
drains; the server starts reading at SERVER_RESUME; writer B sends 256 KiB at B_START and drains.
Socket buffers are small, so each 256 KiB write pauses the transport until the server has read it.
"""
import asyncio
import socket

import pytest

SERVER_RESUME = 0.05
B_START = 0.5
CHUNK = b"z" * (256 * 1024)


class SingleWaiterFlowControl(asyncio.Protocol):
    """Pre-fix FlowControlMixin: one drain waiter, asserted free when a second drain begins."""

    def __init__(self):
        self.transport = None
        self._paused = False
        self._drain_waiter = None
        self._lost = False

    def connection_made(self, transport):
        self.transport = transport
        transport.set_write_buffer_limits(high=16 * 1024, low=4 * 1024)

    def pause_writing(self):
        self._paused = True

    def resume_writing(self):
        self._paused = False
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def connection_lost(self, exc):
        self._lost = True
        waiter, self._drain_waiter = self._drain_waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(ConnectionResetError("connection lost"))

    async def drain(self):
        if self._lost:
            raise ConnectionResetError("connection lost")
        if not self._paused:
            return
        waiter = self._drain_waiter
        if not (waiter is None or waiter.cancelled()):
            raise AssertionError("drain() already has a waiter (assert waiter is None or waiter.cancelled())")
        waiter = asyncio.get_running_loop().create_future()
        self._drain_waiter = waiter
        await waiter


class PausedSink(asyncio.Protocol):
    def __init__(self, made):
        self.made, self.total, self.transport = made, 0, None

    def connection_made(self, transport):
        self.transport = transport
        transport.pause_reading()
        self.made.set_result(self)

    def data_received(self, data):
        self.total += len(data)


@pytest.mark.asyncio
async def test_two_writers_drain_one_connection():
    loop = asyncio.get_running_loop()
    made = loop.create_future()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    server = await loop.create_server(lambda: PausedSink(made), sock=listener)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    sock.setblocking(False)
    await loop.sock_connect(sock, listener.getsockname())
    transport, proto = await loop.create_connection(SingleWaiterFlowControl, sock=sock)
    sink = await asyncio.wait_for(made, 5)
    try:
        async def writer_a():
            transport.write(CHUNK)
            await proto.drain()

        async def server_resumes():
            await asyncio.sleep(SERVER_RESUME)  # the server finishes other work, then reads
            sink.transport.resume_reading()

        async def writer_b():
            await asyncio.sleep(B_START)  # B has its own I/O before it sends
            transport.write(CHUNK)
            await proto.drain()

        await asyncio.wait_for(asyncio.gather(writer_a(), server_resumes(), writer_b()), 5)

        async def until_all_read():
            while sink.total < 2 * len(CHUNK):
                await asyncio.sleep(0.005)

        await asyncio.wait_for(until_all_read(), 5)
    finally:
        transport.close()
        sink.transport.close()
        server.close()
        await server.wait_closed()
