"""A dedicated thread that owns a sqlite3 connection (aiosqlite-style).

sqlite3 connections must be used from the thread that created them.  The
:class:`Driver` starts one daemon thread, opens the connection *on it*, and
feeds it callables through a ``queue.SimpleQueue``.  Each request carries an
``asyncio.Future`` created on the caller's loop; the thread hands the outcome
back with :func:`~bridge._util.resolve_threadsafe`, which drops results for
callers that already gave up.

Closing is idempotent and safe from several tasks at once: the first caller
sends the close request and the stop sentinel, every caller awaits the same
"stopped" future.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from typing import Any, Callable, Iterable, List, Optional, Sequence, Tuple

from ._util import resolve_threadsafe
from .errors import BridgeClosed, DriverError

_STOP = object()

Request = Tuple[asyncio.AbstractEventLoop, asyncio.Future, Callable[[], Any]]


class Driver:
    """Run sqlite3 work on one private thread and await it from asyncio."""

    def __init__(self, database: str = ":memory:", *, name: str = "bridge-driver",
                 isolation_level: Optional[str] = None) -> None:
        self.database = database
        self.name = name
        self._isolation_level = isolation_level
        self._requests: "queue.SimpleQueue[object]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._conn: Optional[sqlite3.Connection] = None
        self._closing = False
        self._stopped: Optional[asyncio.Future] = None
        self._tx_lock = asyncio.Lock()
        self.requests_served = 0
        self.thread_ident: Optional[int] = None

    # -- lifecycle -------------------------------------------------------
    async def start(self) -> "Driver":
        if self._thread is not None:
            raise DriverError("driver already started")
        loop = asyncio.get_running_loop()
        self._stopped = loop.create_future()
        self._thread = threading.Thread(target=self._run, args=(loop,),
                                        name=self.name, daemon=True)
        self._thread.start()
        try:
            await self._submit(self._connect)
        except BaseException:
            await self.close()
            raise
        return self

    def _connect(self) -> None:
        self._conn = sqlite3.connect(self.database,
                                     isolation_level=self._isolation_level)
        self.thread_ident = threading.get_ident()

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            while True:
                item = self._requests.get()
                if item is _STOP:
                    break
                req_loop, fut, fn = item  # type: ignore[misc]
                try:
                    result = fn()
                except BaseException as exc:  # handed to the awaiting task
                    resolve_threadsafe(req_loop, fut, exc=exc)
                else:
                    resolve_threadsafe(req_loop, fut, result)
                self.requests_served += 1
        finally:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._stopped is not None:
                resolve_threadsafe(loop, self._stopped, None)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    async def close(self) -> None:
        """Stop the thread after queued requests finish.  Idempotent."""
        if self._thread is None:
            return
        if not self._closing:
            self._closing = True
            self._requests.put(_STOP)
        assert self._stopped is not None
        await asyncio.shield(self._stopped)
        await asyncio.to_thread(self._thread.join)

    async def __aenter__(self) -> "Driver":
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- requests --------------------------------------------------------
    async def _submit(self, fn: Callable[[], Any]) -> Any:
        if self._closing:
            raise BridgeClosed("driver is closed")
        if not self.running:
            raise DriverError("driver thread is not running")
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._requests.put((loop, fut, fn))
        return await fut

    def _cursor(self) -> sqlite3.Connection:
        if self._conn is None:
            raise DriverError("no connection")
        return self._conn

    async def run(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``fn(connection)`` on the driver thread and return its result."""
        return await self._submit(lambda: fn(self._cursor()))

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Execute one statement; returns ``lastrowid`` (or rowcount)."""
        def op() -> int:
            cur = self._cursor().execute(sql, params)
            return cur.lastrowid if cur.lastrowid else cur.rowcount
        return await self._submit(op)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> int:
        rows = list(rows)
        return await self._submit(lambda: self._cursor().executemany(sql, rows).rowcount)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> List[tuple]:
        return await self._submit(lambda: self._cursor().execute(sql, params).fetchall())

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Optional[tuple]:
        return await self._submit(lambda: self._cursor().execute(sql, params).fetchone())

    async def transaction(self, statements: Sequence[Tuple[str, Sequence[Any]]]) -> None:
        """Apply *statements* atomically: all of them or (on error) none.

        The whole BEGIN ... COMMIT runs as one request on the driver thread,
        so statements of other tasks cannot interleave with it.
        """
        def op() -> None:
            conn = self._cursor()
            conn.execute("BEGIN")
            try:
                for sql, params in statements:
                    conn.execute(sql, params)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        async with self._tx_lock:
            await self._submit(op)
