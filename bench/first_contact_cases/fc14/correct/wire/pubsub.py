"""A line-based publish/subscribe broker and client.

    C: SUB <topic>            S: OK SUB <topic>
    C: UNSUB <topic>          S: OK UNSUB <topic>
    C: PUB <topic> <text>     S: OK PUB <delivered>   and every subscriber gets  MSG <topic> <text>
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict

from .errors import ConnectionClosed, ProtocolError

log = logging.getLogger("wire.pubsub")


class Broker:
    """Connection handler for wire.Server."""

    def __init__(self) -> None:
        self.topics: dict[str, set[asyncio.StreamWriter]] = defaultdict(set)
        self.published = 0
        self.delivered = 0
        self.clients = 0

    def subscribers(self, topic: str) -> int:
        return len(self.topics.get(topic, ()))

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.clients += 1
        mine: set[str] = set()
        try:
            while True:
                raw = await reader.readline()
                if not raw:
                    break
                cmd, _, rest = raw.decode().rstrip("\r\n").partition(" ")
                if cmd == "SUB":
                    self.topics[rest].add(writer)
                    mine.add(rest)
                    writer.write(f"OK SUB {rest}\n".encode())
                elif cmd == "UNSUB":
                    self.topics[rest].discard(writer)
                    mine.discard(rest)
                    writer.write(f"OK UNSUB {rest}\n".encode())
                elif cmd == "PUB":
                    topic, _, text = rest.partition(" ")
                    n = await self._broadcast(topic, text)
                    writer.write(f"OK PUB {n}\n".encode())
                else:
                    writer.write(f"ERR unknown command {cmd}\n".encode())
                await writer.drain()
        finally:
            for topic in mine:
                self.topics[topic].discard(writer)
            self.clients -= 1

    async def _broadcast(self, topic: str, text: str) -> int:
        self.published += 1
        targets = [w for w in self.topics.get(topic, ()) if not w.is_closing()]
        line = f"MSG {topic} {text}\n".encode()
        for w in targets:
            w.write(line)
        results = await asyncio.gather(*(w.drain() for w in targets), return_exceptions=True)
        n = sum(1 for r in results if not isinstance(r, BaseException))
        self.delivered += n
        return n


class PubSubClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self.messages: asyncio.Queue = asyncio.Queue()
        self._replies: asyncio.Queue = asyncio.Queue()
        self._lock = asyncio.Lock()
        self._task = asyncio.create_task(self._read_loop(), name="wire-pubsub-reader")

    @classmethod
    async def connect(cls, host: str, port: int) -> "PubSubClient":
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    async def _read_loop(self) -> None:
        try:
            while True:
                raw = await self._reader.readline()
                if not raw:
                    break
                line = raw.decode().rstrip("\n")
                if line.startswith("MSG "):
                    _, topic, text = line.split(" ", 2)
                    self.messages.put_nowait((topic, text))
                else:
                    self._replies.put_nowait(line)
        except ConnectionError as exc:
            log.debug("pubsub reader stopped: %r", exc)
        finally:
            self._replies.put_nowait(None)
            self.messages.put_nowait(None)

    async def _command(self, line: str) -> str:
        async with self._lock:  # one outstanding command: replies come back in order
            self._writer.write(line.encode() + b"\n")
            await self._writer.drain()
            reply = await self._replies.get()
            if reply is None:
                self._replies.put_nowait(None)
                raise ConnectionClosed(1006, "broker closed the connection")
            if reply.startswith("ERR"):
                raise ProtocolError(reply)
            return reply

    async def subscribe(self, topic: str) -> None:
        await self._command(f"SUB {topic}")

    async def unsubscribe(self, topic: str) -> None:
        await self._command(f"UNSUB {topic}")

    async def publish(self, topic: str, text: str) -> int:
        reply = await self._command(f"PUB {topic} {text}")
        return int(reply.rsplit(" ", 1)[1])

    async def next_message(self, timeout: float = 20.0):
        item = await asyncio.wait_for(self.messages.get(), timeout)
        if item is None:
            self.messages.put_nowait(None)
            raise ConnectionClosed(1006, "broker closed the connection")
        return item

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
