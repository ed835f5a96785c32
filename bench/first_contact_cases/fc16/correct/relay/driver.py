"""An aiosqlite-style driver: one dedicated thread owns a resource and serves
requests; replies travel back to the loop as request/response futures.

The "resource" is a plain dict store (a stand-in for a database connection
that must only be used from the thread that created it).
"""
from __future__ import annotations

import asyncio
import itertools
import queue
import threading
from typing import Any, Callable, Dict, Optional

from .errors import CallTimeout, Closed
from .handoff import resolve_threadsafe

_STOP = object()


class Store:
    """A thread-affine key/value store: every method asserts its owner thread."""

    def __init__(self) -> None:
        self.owner = threading.get_ident()
        self.data: Dict[str, Any] = {}
        self.ops = 0

    def _check(self) -> None:
        if threading.get_ident() != self.owner:
            raise RuntimeError("store used from a foreign thread")

    def get(self, key: str, default: Any = None) -> Any:
        self._check()
        self.ops += 1
        return self.data.get(key, default)

    def put(self, key: str, value: Any) -> None:
        self._check()
        self.ops += 1
        self.data[key] = value

    def incr(self, key: str, by: int = 1) -> int:
        self._check()
        self.ops += 1
        self.data[key] = self.data.get(key, 0) + by
        return self.data[key]


class Driver:
    """Dedicated worker thread with a request queue and reply futures."""

    def __init__(self, name: str = "relay-driver") -> None:
        self._requests: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._pending: Dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._closing = False
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._started = threading.Event()
        self._running: set = set()  # request ids the thread has picked up
        self.late_replies = 0
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)

    async def start(self) -> "Driver":
        self._loop = asyncio.get_running_loop()
        self.thread.start()
        await asyncio.to_thread(self._started.wait)
        return self

    async def __aenter__(self) -> "Driver":
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- worker thread ---------------------------------------------------
    def _serve(self) -> None:
        store = Store()
        self._started.set()
        while True:
            item = self._requests.get()
            if item is _STOP:
                return
            rid, fn, args = item
            with self._lock:
                fut = self._pending.get(rid)
                if fut is None:  # caller gave up before we started
                    continue
                self._running.add(rid)
            try:
                value, exc = fn(store, *args), None
            except Exception as e:  # noqa: BLE001 - forwarded to the caller
                value, exc = None, e
            with self._lock:
                self._running.discard(rid)
                fut = self._pending.pop(rid, None)
            if fut is None:
                with self._lock:
                    self.late_replies += 1
                continue
            resolve_threadsafe(self._loop, fut, value, exc)

    # -- loop side -------------------------------------------------------
    async def call(self, fn: Callable[..., Any], *args: Any,
                   timeout: Optional[float] = None) -> Any:
        """Run ``fn(store, *args)`` on the driver thread."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        rid = next(self._ids)
        with self._lock:
            if self._closing:
                raise Closed("driver is closed")
            self._pending[rid] = fut
            # enqueue under the lock so a concurrent close() cannot slip its
            # stop sentinel in front of an accepted request
            self._requests.put((rid, fn, args))
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            with self._lock:
                started = rid in self._running
                self._pending.pop(rid, None)
            raise CallTimeout(f"request {rid} timed out", started=started) from None
        except asyncio.CancelledError:
            with self._lock:
                self._pending.pop(rid, None)
            raise

    async def get(self, key: str, default: Any = None) -> Any:
        return await self.call(Store.get, key, default)

    async def put(self, key: str, value: Any) -> None:
        await self.call(Store.put, key, value)

    async def incr(self, key: str, by: int = 1) -> int:
        return await self.call(Store.incr, key, by)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    async def close(self) -> None:
        """Stop after the already queued requests; idempotent."""
        with self._lock:
            first = not self._closing
            self._closing = True
        if first and self.thread.is_alive():
            self._requests.put(_STOP)
        if self.thread.ident is not None:
            await asyncio.to_thread(self.thread.join)
