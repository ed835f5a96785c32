"""asyncio.Protocol / BufferedProtocol building blocks with flow control and half-close."""
from __future__ import annotations

import asyncio
import collections
import logging

from .errors import ConnectionClosed

log = logging.getLogger("wire.flow")


class FlowControlledProtocol(asyncio.Protocol):
    """Client-side protocol whose ``drain()`` honours pause_writing/resume_writing.

    Any number of tasks may wait in ``drain()`` at once (one future each).
    """

    def __init__(self, *, high: int | None = None, low: int | None = None) -> None:
        self._limits = (high, low)
        self.transport: asyncio.Transport | None = None
        self.paused = False
        self.pause_count = 0
        self.resume_count = 0
        self._drain_waiters: collections.deque[asyncio.Future] = collections.deque()
        self.received = bytearray()
        self.eof = False
        self.lost: asyncio.Future = asyncio.get_running_loop().create_future()
        self._data_event = asyncio.Event()

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        high, low = self._limits
        if high is not None:
            transport.set_write_buffer_limits(high=high, low=low)

    def pause_writing(self) -> None:
        self.paused = True
        self.pause_count += 1

    def resume_writing(self) -> None:
        self.paused = False
        self.resume_count += 1
        self._wake_drainers(None)

    def _wake_drainers(self, exc: BaseException | None) -> None:
        while self._drain_waiters:
            fut = self._drain_waiters.popleft()
            if fut.done():
                continue
            if exc is None:
                fut.set_result(None)
            else:
                fut.set_exception(exc)

    async def drain(self) -> None:
        if self.lost.done():
            raise ConnectionClosed(1006, "connection lost")
        if not self.paused:
            return
        fut = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(fut)
        await fut

    def write(self, data: bytes) -> None:
        if self.transport is None or self.transport.is_closing():
            raise ConnectionClosed(1006, "transport closing")
        self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        self.received += data
        self._data_event.set()

    def eof_received(self) -> bool:
        self.eof = True
        self._data_event.set()
        return False

    async def wait_for_data(self, n: int) -> bytes:
        while len(self.received) < n:
            if self.eof or self.lost.done():
                raise ConnectionClosed(1006, f"EOF after {len(self.received)} of {n} bytes")
            self._data_event.clear()
            await self._data_event.wait()
        return bytes(self.received[:n])

    def connection_lost(self, exc: Exception | None) -> None:
        self._wake_drainers(ConnectionClosed(1006, "connection lost"))
        self._data_event.set()
        if not self.lost.done():
            self.lost.set_result(exc)


class CountingSinkProtocol(asyncio.Protocol):
    """Server side: counts bytes; can pause/resume reading; answers a half-close with the total.

    After the client's ``write_eof()`` it writes ``b"TOTAL <n>\\n"`` and closes its side.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.total = 0
        self.reading_paused = False
        self.got_eof = False
        self.made = asyncio.get_running_loop().create_future()
        self.lost = asyncio.get_running_loop().create_future()
        self.first_data = asyncio.Event()

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.made.set_result(None)

    def pause(self) -> None:
        self.reading_paused = True
        self.transport.pause_reading()

    def resume(self) -> None:
        self.reading_paused = False
        self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        self.total += len(data)
        self.first_data.set()

    def eof_received(self) -> bool:
        self.got_eof = True
        self.transport.write(f"TOTAL {self.total}\n".encode())
        self.transport.close()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)


class BufferedEchoProtocol(asyncio.BufferedProtocol):
    """Zero-copy receive into a preallocated buffer; echoes each chunk back."""

    def __init__(self, chunk: int = 4096) -> None:
        self._buf = bytearray(chunk)
        self.transport: asyncio.Transport | None = None
        self.chunks = 0
        self.echoed = 0
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return memoryview(self._buf)

    def buffer_updated(self, nbytes: int) -> None:
        self.chunks += 1
        self.echoed += nbytes
        self.transport.write(bytes(self._buf[:nbytes]))

    def eof_received(self) -> bool:
        return False  # close the transport, which also closes our side

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)


class ServerFactory:
    """A protocol factory that remembers the protocols it made, with an event per connection."""

    def __init__(self, cls, *args, **kwargs) -> None:
        self._cls = cls
        self._args = args
        self._kwargs = kwargs
        self.protocols: list = []
        self.connected = asyncio.Event()

    def __call__(self):
        proto = self._cls(*self._args, **self._kwargs)
        self.protocols.append(proto)
        self.connected.set()
        return proto
