"""A websocket-like message protocol: typed frames, ping/pong keepalive, close handshake.

Frame: 1 byte opcode, 4-byte big-endian length, payload.  Close payload: 2-byte code + reason.
As in RFC 6455: a Ping is answered with a Pong only while OPEN; on receiving a Close the peer
answers with a Close (if it has not sent one), and the server closes the TCP connection first.
"""
from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
import struct
import time

from .errors import ConnectionClosed, ProtocolError

log = logging.getLogger("wire.ws")

TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA
_HEADER = struct.Struct("!BI")
MAX_FRAME = 1 << 20
_EOF = object()


class State(enum.Enum):
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


class WsConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 server_side: bool, ping_interval: float | None = None, ping_timeout: float = 10.0,
                 close_timeout: float = 10.0) -> None:
        self._reader = reader
        self._writer = writer
        self.server_side = server_side
        self.state = State.OPEN
        self.close_code: int | None = None
        self.close_reason = ""
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.close_timeout = close_timeout
        self._messages: asyncio.Queue = asyncio.Queue()
        self._pings: dict[bytes, asyncio.Future] = {}
        self._close_sent = False
        self.pongs_sent = 0
        self.pings_received = 0
        self.keepalive_pings = 0
        self.closed: asyncio.Future = asyncio.get_running_loop().create_future()
        self._reader_task = asyncio.create_task(self._read_loop(), name="wire-ws-reader")
        self._keepalive_task = (asyncio.create_task(self._keepalive(), name="wire-ws-keepalive")
                                if ping_interval else None)

    @classmethod
    async def connect(cls, host: str, port: int, **kwargs) -> "WsConnection":
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, server_side=False, **kwargs)

    # -- frames ------------------------------------------------------------------
    def _write_frame(self, opcode: int, payload: bytes) -> None:
        if self._writer.is_closing():
            raise ConnectionClosed(self.close_code or 1006, "transport closing")
        self._writer.write(_HEADER.pack(opcode, len(payload)) + payload)

    async def _read_frame(self):
        try:
            header = await self._reader.readexactly(_HEADER.size)
        except asyncio.IncompleteReadError:
            return None
        opcode, size = _HEADER.unpack(header)
        if size > MAX_FRAME:
            raise ProtocolError(f"frame too large: {size}")
        try:
            payload = await self._reader.readexactly(size)
        except asyncio.IncompleteReadError:
            return None
        return opcode, payload

    # -- public API ----------------------------------------------------------------
    async def send(self, message: str | bytes) -> None:
        if self.state is not State.OPEN:
            raise ConnectionClosed(self.close_code or 1006, "send on a connection that is not open")
        if isinstance(message, str):
            self._write_frame(TEXT, message.encode())
        else:
            self._write_frame(BINARY, bytes(message))
        await self._writer.drain()

    async def recv(self):
        item = await self._messages.get()
        if item is _EOF:
            self._messages.put_nowait(_EOF)  # wake any other receiver too
            raise ConnectionClosed(self.close_code or 1006, self.close_reason)
        return item

    async def ping(self, data: bytes | None = None) -> float:
        """Send a Ping and wait for its Pong; return the round-trip time in seconds."""
        if self.state is not State.OPEN:
            raise ConnectionClosed(self.close_code or 1006, "ping on a connection that is not open")
        data = data if data is not None else os.urandom(4)
        fut = asyncio.get_running_loop().create_future()
        self._pings[data] = fut
        start = time.monotonic()
        self._write_frame(PING, data)
        await self._writer.drain()
        try:
            await fut
        finally:
            self._pings.pop(data, None)
        return time.monotonic() - start

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if self.state is State.OPEN:
            self.state = State.CLOSING
            self._send_close(code, reason)
        with contextlib.suppress(asyncio.TimeoutError, ConnectionError):
            await asyncio.wait_for(asyncio.shield(self._reader_task), self.close_timeout)
        await self._shutdown()

    async def wait_closed(self) -> int:
        await asyncio.shield(self.closed)
        return self.close_code

    # -- internals -------------------------------------------------------------------
    def _send_close(self, code: int, reason: str) -> None:
        if self._close_sent:
            return
        self._close_sent = True
        with contextlib.suppress(ConnectionClosed):
            self._write_frame(CLOSE, struct.pack("!H", code) + reason.encode())

    async def _read_loop(self) -> None:
        try:
            while True:
                frame = await self._read_frame()
                if frame is None:
                    break
                opcode, payload = frame
                if opcode == TEXT:
                    self._messages.put_nowait(payload.decode())
                elif opcode == BINARY:
                    self._messages.put_nowait(payload)
                elif opcode == PING:
                    self.pings_received += 1
                    if self.state is State.OPEN:
                        self._write_frame(PONG, payload)
                        self.pongs_sent += 1
                elif opcode == PONG:
                    fut = self._pings.get(payload)
                    if fut is not None and not fut.done():
                        fut.set_result(None)
                elif opcode == CLOSE:
                    code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                    self.close_code = code
                    self.close_reason = payload[2:].decode()
                    self._send_close(code, self.close_reason)
                    self.state = State.CLOSED
                    if self.server_side:
                        self._writer.close()
                        break
                    # client: wait for the server to close the TCP connection
                    await self._reader.read()
                    break
                else:
                    raise ProtocolError(f"unknown opcode {opcode:#x}")
        except (ConnectionError, ProtocolError) as exc:
            log.debug("reader stopped: %r", exc)
        finally:
            self.state = State.CLOSED
            if self.close_code is None:
                self.close_code = 1006
            self._messages.put_nowait(_EOF)
            for fut in self._pings.values():
                if not fut.done():
                    fut.set_exception(ConnectionClosed(self.close_code, "closed before pong"))
            if not self.closed.done():
                self.closed.set_result(self.close_code)

    async def _keepalive(self) -> None:
        while self.state is State.OPEN:
            await asyncio.sleep(self.ping_interval)
            if self.state is not State.OPEN:
                break
            self.keepalive_pings += 1
            try:
                await asyncio.wait_for(self.ping(), self.ping_timeout)
            except asyncio.TimeoutError:
                log.info("keepalive ping timed out after %.3fs", self.ping_timeout)
                self.close_code = 1011
                self.close_reason = "keepalive ping timeout"
                self.state = State.CLOSED
                self._writer.transport.abort()
                break
            except ConnectionClosed:
                break

    async def _shutdown(self) -> None:
        if self._keepalive_task is not None and self._keepalive_task is not asyncio.current_task():
            self._keepalive_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keepalive_task
        if not self._reader_task.done():
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader_task
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()

    async def __aenter__(self) -> "WsConnection":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


class WsServerHandler:
    """wire.Server handler: wraps each connection in a WsConnection and runs ``app(conn)``."""

    def __init__(self, app, **options) -> None:
        self.app = app
        self.options = options
        self.connections: list[WsConnection] = []
        self.connected = asyncio.Event()

    async def __call__(self, reader, writer) -> None:
        conn = WsConnection(reader, writer, server_side=True, **self.options)
        self.connections.append(conn)
        self.connected.set()
        try:
            await self.app(conn)
        except ConnectionClosed:
            pass
        finally:
            await conn.close()


async def echo_app(conn: WsConnection) -> None:
    while True:
        try:
            message = await conn.recv()
        except ConnectionClosed:
            return
        if message == "close-me":
            await conn.close(4000, "asked to")
            return
        await conn.send(message)
