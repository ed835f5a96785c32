"""A stream server wrapper that tracks its connection handlers and shuts down gracefully.

On Python 3.11 ``asyncio.Server.wait_closed()`` does not wait for connection handlers, so
``Server.close()`` does it itself: stop accepting, give the running handlers ``grace`` seconds
to finish, cancel the rest, close their writers, then wait for the listening server to close.
"""
from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Awaitable, Callable

log = logging.getLogger("wire.server")

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

_LIVE: "weakref.WeakSet[Server]" = weakref.WeakSet()


def live_servers() -> list["Server"]:
    """Servers that were started and not closed yet (used by test suites to find leaks)."""
    return [s for s in _LIVE if not s.closed]


class Server:
    def __init__(self, handler: Handler, *, name: str = "server") -> None:
        self._handler = handler
        self.name = name
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.accepted = 0
        self.completed = 0
        self.cancelled = 0
        self.errors: list[BaseException] = []
        self.closed = False
        self._closing = False

    # -- start ---------------------------------------------------------------
    async def start_tcp(self, host: str = "127.0.0.1", port: int = 0, **kwargs) -> "Server":
        self._server = await asyncio.start_server(self._on_connect, host, port, **kwargs)
        _LIVE.add(self)
        return self

    async def start_unix(self, path: str, **kwargs) -> "Server":
        self._server = await asyncio.start_unix_server(self._on_connect, path, **kwargs)
        _LIVE.add(self)
        return self

    @property
    def sockets(self):
        return self._server.sockets if self._server is not None else ()

    @property
    def address(self):
        return self.sockets[0].getsockname()

    @property
    def port(self) -> int:
        return self.address[1]

    @property
    def active(self) -> int:
        return len(self._tasks)

    # -- connections -----------------------------------------------------------
    async def _on_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:
            writer.close()
            return
        task = asyncio.current_task()
        self._tasks.add(task)
        self._writers.add(writer)
        self.accepted += 1
        try:
            await self._handler(reader, writer)
            self.completed += 1
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.debug("%s: connection dropped: %r", self.name, exc)
        except Exception as exc:  # a handler bug must not kill the server
            log.exception("%s: handler failed", self.name)
            self.errors.append(exc)
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, OSError, asyncio.CancelledError):
                pass

    # -- shutdown --------------------------------------------------------------
    async def close(self, grace: float = 5.0) -> None:
        if self.closed:
            return
        self._closing = True
        if self._server is not None:
            self._server.close()
        pending = set(self._tasks)
        if pending:
            done, pending = await asyncio.wait(pending, timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        for writer in list(self._writers):
            writer.close()
        if self._server is not None:
            await self._server.wait_closed()
        self.closed = True
        log.debug("%s closed (%d accepted, %d completed, %d cancelled)",
                  self.name, self.accepted, self.completed, self.cancelled)

    async def __aenter__(self) -> "Server":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


async def serve_tcp(handler: Handler, host: str = "127.0.0.1", port: int = 0, *,
                    name: str = "tcp", **kwargs) -> Server:
    return await Server(handler, name=name).start_tcp(host, port, **kwargs)


async def serve_unix(handler: Handler, path: str, *, name: str = "unix", **kwargs) -> Server:
    return await Server(handler, name=name).start_unix(path, **kwargs)


async def line_echo_handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Echo each line back, upper-cased after 'UPPER', until 'QUIT' or EOF."""
    upper = False
    while True:
        line = await reader.readline()
        if not line:
            break
        text = line.decode().rstrip("\r\n")
        if text == "QUIT":
            writer.write(b"BYE\r\n")
            await writer.drain()
            break
        if text == "UPPER":
            upper = True
            writer.write(b"OK\r\n")
        else:
            writer.write(((text.upper() if upper else text) + "\r\n").encode())
        await writer.drain()
