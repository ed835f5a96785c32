"""Forward ``logging`` records from any thread into an ``asyncio.Queue``.

``asyncio.Queue`` is not thread-safe: a record emitted on a worker thread is
handed over with ``call_soon_threadsafe``; a record emitted on the loop
thread itself is enqueued directly (so ordering with loop-side code holds).
"""
from __future__ import annotations

import asyncio
import logging
import threading
from typing import List, Optional


class AsyncQueueHandler(logging.Handler):
    def __init__(self, queue: "asyncio.Queue[logging.LogRecord]",
                 loop: Optional[asyncio.AbstractEventLoop] = None,
                 level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.queue = queue
        self.loop = loop or asyncio.get_running_loop()
        self._count_lock = threading.Lock()
        self.dropped = 0
        self.forwarded = 0

    def _enqueue(self, record: logging.LogRecord) -> None:
        try:
            self.queue.put_nowait(record)
        except asyncio.QueueFull:
            with self._count_lock:
                self.dropped += 1
        else:
            with self._count_lock:
                self.forwarded += 1

    def emit(self, record: logging.LogRecord) -> None:
        try:
            # render the message now, on the emitting thread, so that later
            # mutation of the args cannot change what the consumer sees
            record.message = record.getMessage()
            record.msg, record.args = record.message, None
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is self.loop:
                self._enqueue(record)
            else:
                self.loop.call_soon_threadsafe(self._enqueue, record)
        except RuntimeError:  # loop closed
            with self._count_lock:
                self.dropped += 1
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


class LogPump:
    """Attach an ``AsyncQueueHandler`` to a logger and collect records."""

    def __init__(self, logger_name: str, maxsize: int = 0,
                 level: int = logging.DEBUG) -> None:
        self.logger = logging.getLogger(logger_name)
        self.queue: "asyncio.Queue[logging.LogRecord]" = asyncio.Queue(maxsize)
        self.handler = AsyncQueueHandler(self.queue, level=level)
        self._old_level = self.logger.level
        self._old_propagate = self.logger.propagate

    def __enter__(self) -> "LogPump":
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.DEBUG)
        self.logger.propagate = False
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self._old_level)
        self.logger.propagate = self._old_propagate

    async def collect(self, n: int, timeout: float = 20.0) -> List[str]:
        out: List[str] = []
        async with asyncio.timeout(timeout):
            while len(out) < n:
                rec = await self.queue.get()
                out.append(rec.getMessage())
        return out

    def drain_nowait(self) -> List[str]:
        out = []
        while True:
            try:
                out.append(self.queue.get_nowait().getMessage())
            except asyncio.QueueEmpty:
                return out
