"""UDP request/reply with request ids and retransmission.

Wire format: ``<id>:<payload>``.  The server can be told to drop the first N datagrams of
each id (to exercise retransmission) or to answer twice (duplicates must be ignored).
"""
from __future__ import annotations

import asyncio
import itertools
import logging
from collections import Counter

log = logging.getLogger("wire.datagram")


class UdpReplyServer(asyncio.DatagramProtocol):
    def __init__(self, *, drop_first: int = 0, duplicate: bool = False, upper: bool = True) -> None:
        self.drop_first = drop_first
        self.duplicate = duplicate
        self.upper = upper
        self.transport: asyncio.DatagramTransport | None = None
        self.seen: Counter = Counter()
        self.dropped = 0
        self.answered = 0

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr) -> None:
        rid, _, payload = data.partition(b":")
        self.seen[rid] += 1
        if self.seen[rid] <= self.drop_first:
            self.dropped += 1
            return
        reply = rid + b":" + (payload.upper() if self.upper else payload)
        self.transport.sendto(reply, addr)
        if self.duplicate:
            self.transport.sendto(reply, addr)
        self.answered += 1


class UdpClient(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.transport: asyncio.DatagramTransport | None = None
        self._ids = itertools.count(1)
        self._pending: dict[bytes, asyncio.Future] = {}
        self.sent = 0
        self.duplicates = 0
        self.errors: list[Exception] = []

    @classmethod
    async def connect(cls, addr) -> "UdpClient":
        loop = asyncio.get_running_loop()
        _, proto = await loop.create_datagram_endpoint(cls, remote_addr=addr)
        return proto

    def connection_made(self, transport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr) -> None:
        rid, _, payload = data.partition(b":")
        fut = self._pending.get(rid)
        if fut is None or fut.done():
            self.duplicates += 1
            return
        fut.set_result(payload)

    def error_received(self, exc: Exception) -> None:
        self.errors.append(exc)

    async def request(self, payload: bytes, *, interval: float = 0.05, retries: int = 5) -> bytes:
        """Send, and resend every ``interval`` seconds, up to ``retries`` resends."""
        rid = str(next(self._ids)).encode()
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        try:
            for _attempt in range(retries + 1):
                self.transport.sendto(rid + b":" + payload)
                self.sent += 1
                try:
                    return await asyncio.wait_for(asyncio.shield(fut), interval)
                except asyncio.TimeoutError:
                    log.debug("request %s: no reply after %.3fs, resending", rid, interval)
            raise TimeoutError(f"no reply to request {rid.decode()} after {retries + 1} attempts")
        finally:
            del self._pending[rid]
            fut.cancel()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
