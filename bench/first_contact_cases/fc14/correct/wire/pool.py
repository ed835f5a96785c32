"""A connection pool with a maximum size, idle expiry and health checks on checkout."""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from typing import Awaitable, Callable, Generic, Protocol, TypeVar

from .errors import PoolClosed, PoolTimeout

log = logging.getLogger("wire.pool")


class PooledConnection(Protocol):
    def is_usable(self) -> bool: ...
    async def aclose(self) -> None: ...


C = TypeVar("C", bound=PooledConnection)


class StreamConnection:
    """A (reader, writer) pair that knows whether the peer has gone away."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, host: str, port: int, **kwargs) -> "StreamConnection":
        reader, writer = await asyncio.open_connection(host, port, **kwargs)
        return cls(reader, writer)

    def is_usable(self) -> bool:
        # at_eof() is only true once the buffer is empty *and* EOF was received; unread data
        # left behind by a previous user also makes a connection unusable.
        return not (self.writer.is_closing() or self.reader.at_eof() or self.reader._buffer)

    async def request_line(self, line: str) -> str:
        self.writer.write(line.encode() + b"\r\n")
        await self.writer.drain()
        reply = await self.reader.readline()
        if not reply:
            raise ConnectionResetError("server closed the connection")
        return reply.decode().rstrip("\r\n")

    async def aclose(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()


class _Idle(Generic[C]):
    __slots__ = ("conn", "since")

    def __init__(self, conn: C, since: float) -> None:
        self.conn = conn
        self.since = since


class Pool(Generic[C]):
    def __init__(self, factory: Callable[[], Awaitable[C]], *, max_size: int = 4,
                 idle_timeout: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        if max_size < 1:
            raise ValueError("max_size must be >= 1")
        self._factory = factory
        self.max_size = max_size
        self.idle_timeout = idle_timeout
        self._clock = clock
        self._idle: deque[_Idle[C]] = deque()
        self._in_use: set[C] = set()
        self._opening = 0
        self._cond = asyncio.Condition()
        self.closed = False
        self.created = 0
        self.reused = 0
        self.expired = 0
        self.discarded = 0

    @property
    def size(self) -> int:
        return len(self._idle) + len(self._in_use) + self._opening

    @property
    def idle(self) -> int:
        return len(self._idle)

    @property
    def in_use(self) -> int:
        return len(self._in_use)

    async def _take_idle(self) -> C | None:
        now = self._clock()
        while self._idle:
            entry = self._idle.pop()  # LIFO: the most recently used connection is the warmest
            if now - entry.since >= self.idle_timeout:
                self.expired += 1
                await entry.conn.aclose()
                continue
            if not entry.conn.is_usable():
                self.discarded += 1
                await entry.conn.aclose()
                continue
            return entry.conn
        return None

    async def acquire(self, timeout: float | None = None) -> C:
        async def _acquire() -> C:
            async with self._cond:
                while True:
                    if self.closed:
                        raise PoolClosed("pool is closed")
                    conn = await self._take_idle()
                    if conn is not None:
                        self.reused += 1
                        self._in_use.add(conn)
                        return conn
                    if self.size < self.max_size:
                        self._opening += 1
                        break
                    await self._cond.wait()
            try:
                conn = await self._factory()
            except BaseException:
                async with self._cond:
                    self._opening -= 1
                    self._cond.notify()
                raise
            async with self._cond:
                self._opening -= 1
                self.created += 1
                if self.closed:
                    await conn.aclose()
                    raise PoolClosed("pool closed while connecting")
                self._in_use.add(conn)
            return conn

        if timeout is None:
            return await _acquire()
        try:
            return await asyncio.wait_for(_acquire(), timeout)
        except asyncio.TimeoutError:
            raise PoolTimeout(f"no connection available within {timeout}s") from None

    async def release(self, conn: C, *, discard: bool = False) -> None:
        async with self._cond:
            self._in_use.discard(conn)
            if discard or self.closed or not conn.is_usable():
                self.discarded += 1
                await conn.aclose()
            else:
                self._idle.append(_Idle(conn, self._clock()))
            self._cond.notify()

    @contextlib.asynccontextmanager
    async def connection(self, timeout: float | None = None):
        conn = await self.acquire(timeout)
        ok = False
        try:
            yield conn
            ok = True
        finally:
            await self.release(conn, discard=not ok)

    async def prune(self) -> int:
        """Close idle connections past their idle timeout; return how many were closed."""
        async with self._cond:
            now = self._clock()
            keep, dropped = deque(), []
            for entry in self._idle:
                (dropped if now - entry.since >= self.idle_timeout else keep).append(entry)
            self._idle = keep
            for entry in dropped:
                self.expired += 1
                await entry.conn.aclose()
            return len(dropped)

    async def close(self) -> None:
        async with self._cond:
            self.closed = True
            idle, self._idle = list(self._idle), deque()
            in_use = list(self._in_use)
            self._cond.notify_all()
        for entry in idle:
            await entry.conn.aclose()
        for conn in in_use:
            await conn.aclose()

    async def __aenter__(self) -> "Pool[C]":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
