"""Low-level socket helpers built on loop.sock_* and loop.sendfile."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket

log = logging.getLogger("wire.lowlevel")


def nonblocking_socket(family=socket.AF_INET, type=socket.SOCK_STREAM) -> socket.socket:
    sock = socket.socket(family, type)
    sock.setblocking(False)
    return sock


async def sock_request(addr, payload: bytes, *, family=socket.AF_INET, expect: int | None = None) -> bytes:
    """Connect with loop.sock_connect, send everything, half-close, read until EOF (or ``expect`` bytes)."""
    loop = asyncio.get_running_loop()
    with nonblocking_socket(family) as sock:
        await loop.sock_connect(sock, addr)
        await loop.sock_sendall(sock, payload)
        if expect is None:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        received = 0
        while expect is None or received < expect:
            chunk = await loop.sock_recv(sock, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            received += len(chunk)
        return b"".join(chunks)


class SockEchoServer:
    """An accept loop on loop.sock_accept; each connection echoes until EOF, then closes."""

    def __init__(self, family=socket.AF_INET, address=("127.0.0.1", 0)) -> None:
        self._listener = nonblocking_socket(family)
        self._listener.bind(address)
        self._listener.listen(16)
        self.address = self._listener.getsockname()
        self._accept_task: asyncio.Task | None = None
        self._conn_tasks: set[asyncio.Task] = set()
        self.served = 0

    def start(self) -> "SockEchoServer":
        self._accept_task = asyncio.create_task(self._accept_loop(), name="wire-sock-accept")
        return self

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn, _ = await loop.sock_accept(self._listener)
            conn.setblocking(False)
            task = asyncio.create_task(self._echo(conn))
            self._conn_tasks.add(task)
            task.add_done_callback(self._conn_tasks.discard)

    async def _echo(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        with conn:
            while True:
                data = await loop.sock_recv(conn, 65536)
                if not data:
                    break
                await loop.sock_sendall(conn, data)
            self.served += 1

    async def close(self) -> None:
        tasks = [t for t in (self._accept_task, *self._conn_tasks) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._listener.close()

    async def __aenter__(self) -> "SockEchoServer":
        return self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()


async def send_file(writer: asyncio.StreamWriter, path: str | os.PathLike, *,
                    offset: int = 0, count: int | None = None) -> int:
    """Send (part of) a file over a stream with loop.sendfile (falls back to read/send)."""
    loop = asyncio.get_running_loop()
    await writer.drain()
    with open(path, "rb") as f:
        sent = await loop.sendfile(writer.transport, f, offset, count)
    return sent


async def read_all(reader: asyncio.StreamReader) -> bytes:
    return await reader.read()


async def drain_and_close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        await writer.drain()
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()
