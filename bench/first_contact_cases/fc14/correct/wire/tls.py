"""TLS helpers: contexts from PEM files, and a STARTTLS-style line protocol.

STARTTLS dialogue (plaintext first)::

    S: 220 wire ready
    C: STARTTLS            S: 220 go ahead      (both sides upgrade with start_tls)
    C: <line>              S: <line reversed>   (now over TLS)
    C: QUIT                S: 221 bye
"""
from __future__ import annotations

import asyncio
import logging
import ssl

from .errors import ProtocolError

log = logging.getLogger("wire.tls")


def server_context(certfile: str, keyfile: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(certfile, keyfile)
    return ctx


def client_context(cafile: str | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile)
    return ctx


class StartTlsHandler:
    """Server-side connection handler for wire.Server implementing the dialogue above."""

    def __init__(self, ctx: ssl.SSLContext, *, handshake_timeout: float = 10.0) -> None:
        self.ctx = ctx
        self.handshake_timeout = handshake_timeout
        self.upgraded = 0
        self.lines_over_tls: list[str] = []

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"220 wire ready\r\n")
        await writer.drain()
        tls = False
        while True:
            raw = await reader.readline()
            if not raw:
                return
            line = raw.decode().rstrip("\r\n")
            if line == "STARTTLS" and not tls:
                writer.write(b"220 go ahead\r\n")
                await writer.drain()
                await writer.start_tls(self.ctx, ssl_handshake_timeout=self.handshake_timeout)
                tls = True
                self.upgraded += 1
            elif line == "QUIT":
                writer.write(b"221 bye\r\n")
                await writer.drain()
                return
            elif line == "TLS?":
                writer.write(b"250 " + (b"yes" if writer.get_extra_info("ssl_object") else b"no") + b"\r\n")
                await writer.drain()
            else:
                if tls:
                    self.lines_over_tls.append(line)
                writer.write(line[::-1].encode() + b"\r\n")
                await writer.drain()


async def starttls_connect(host: str, port: int, ctx: ssl.SSLContext, *, server_hostname: str,
                           handshake_timeout: float = 10.0):
    """Connect in plaintext, read the greeting, negotiate STARTTLS, return (reader, writer)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        greeting = await reader.readline()
        if not greeting.startswith(b"220 "):
            raise ProtocolError(f"unexpected greeting {greeting!r}")
        writer.write(b"STARTTLS\r\n")
        await writer.drain()
        answer = await reader.readline()
        if not answer.startswith(b"220 "):
            raise ProtocolError(f"STARTTLS refused: {answer!r}")
        await writer.start_tls(ctx, server_hostname=server_hostname,
                               ssl_handshake_timeout=handshake_timeout)
    except BaseException:
        writer.close()
        raise
    return reader, writer


async def request_line(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, line: str) -> str:
    writer.write(line.encode() + b"\r\n")
    await writer.drain()
    raw = await reader.readline()
    if not raw:
        raise ConnectionResetError("peer closed")
    return raw.decode().rstrip("\r\n")
