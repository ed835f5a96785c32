"""JSON request/response over length-prefixed frames, with pipelining and per-request timeouts.

Each request carries an id; the server may answer out of order (it handles requests
concurrently), and the client matches answers to callers by id.  A request that times out
is forgotten: its late answer is counted in ``late_replies`` and dropped.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
from typing import Any, Awaitable, Callable

from .errors import ConnectionClosed, ProtocolError, RemoteError
from .framing import LengthPrefixedCodec

log = logging.getLogger("wire.rpc")

Method = Callable[..., Awaitable[Any]]


class RpcServerHandler:
    """A connection handler (for wire.Server) dispatching to async methods."""

    def __init__(self, methods: dict[str, Method], codec: LengthPrefixedCodec | None = None) -> None:
        self.methods = dict(methods)
        self.codec = codec or LengthPrefixedCodec()
        self.handled = 0

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        inflight: set[asyncio.Task] = set()
        try:
            while True:
                frame = await self.codec.read_frame(reader)
                if frame is None:
                    break
                request = json.loads(frame)
                task = asyncio.create_task(self._answer(request, writer))
                inflight.add(task)
                task.add_done_callback(inflight.discard)
            # EOF: nobody is left to read the answers of requests still running
        finally:
            for task in inflight:
                task.cancel()
            if inflight:
                await asyncio.gather(*inflight, return_exceptions=True)

    async def _answer(self, request: dict, writer: asyncio.StreamWriter) -> None:
        rid = request.get("id")
        method = self.methods.get(request.get("method"))
        if method is None:
            reply = {"id": rid, "error": ["NoSuchMethod", str(request.get("method"))]}
        else:
            try:
                reply = {"id": rid, "result": await method(*request.get("params", []))}
            except Exception as exc:
                reply = {"id": rid, "error": [type(exc).__name__, str(exc)]}
        self.handled += 1
        if writer.is_closing():
            return
        writer.write(self.codec.encode(json.dumps(reply).encode()))
        try:
            await writer.drain()
        except ConnectionError:
            pass


class RpcClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 *, codec: LengthPrefixedCodec | None = None, default_timeout: float | None = None) -> None:
        self._reader = reader
        self._writer = writer
        self.codec = codec or LengthPrefixedCodec()
        self.default_timeout = default_timeout
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self.late_replies = 0
        self.closed = False
        self._close_exc: BaseException | None = None
        self._reader_task = asyncio.create_task(self._read_loop(), name="wire-rpc-reader")

    @classmethod
    async def connect(cls, host: str, port: int, **kwargs) -> "RpcClient":
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, **kwargs)

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def _read_loop(self) -> None:
        exc: BaseException = ConnectionClosed(1000, "server closed the connection")
        try:
            while True:
                frame = await self.codec.read_frame(self._reader)
                if frame is None:
                    break
                reply = json.loads(frame)
                fut = self._pending.pop(reply.get("id"), None)
                if fut is None or fut.done():
                    self.late_replies += 1
                    continue
                if "error" in reply:
                    fut.set_exception(RemoteError(*reply["error"]))
                else:
                    fut.set_result(reply.get("result"))
        except (ConnectionError, ProtocolError) as e:
            exc = ConnectionClosed(1006, str(e))
        except asyncio.CancelledError:
            exc = ConnectionClosed(1000, "client closed")
            raise
        finally:
            self._fail_pending(exc)

    def _fail_pending(self, exc: BaseException) -> None:
        self._close_exc = exc
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(exc)

    async def call(self, method: str, *params: Any, timeout: float | None = None) -> Any:
        if self.closed or self._reader_task.done():
            raise self._close_exc or ConnectionClosed(1000, "client closed")
        rid = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        payload = json.dumps({"id": rid, "method": method, "params": list(params)}).encode()
        self._writer.write(self.codec.encode(payload))
        timeout = self.default_timeout if timeout is None else timeout
        try:
            await self._writer.drain()
            if timeout is None:
                return await fut
            return await asyncio.wait_for(fut, timeout)
        finally:
            # a timed-out or cancelled caller forgets its id; a late reply is then dropped
            if self._pending.get(rid) is fut:
                del self._pending[rid]

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass
        self._reader_task.cancel()
        try:
            await self._reader_task
        except asyncio.CancelledError:
            pass

    async def __aenter__(self) -> "RpcClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


def demo_methods() -> dict[str, Method]:
    """Methods used by examples and tests."""

    async def echo(value):
        return value

    async def add(a, b):
        return a + b

    async def sleep(delay, value=None):
        await asyncio.sleep(delay)
        return value

    async def fail(message):
        raise ValueError(message)

    return {"echo": echo, "add": add, "sleep": sleep, "fail": fail}
