"""Framing codecs over asyncio streams: 4-byte big-endian length prefix, and CRLF/LF lines."""
from __future__ import annotations

import asyncio
import struct

from .errors import FrameTooLarge, IncompleteFrame, ProtocolError

_HEADER = struct.Struct("!I")


class LengthPrefixedCodec:
    """Each frame is a 4-byte unsigned big-endian length followed by that many bytes."""

    header_size = _HEADER.size

    def __init__(self, max_size: int = 1 << 20) -> None:
        self.max_size = max_size

    def encode(self, payload: bytes) -> bytes:
        if len(payload) > self.max_size:
            raise FrameTooLarge(len(payload), self.max_size)
        return _HEADER.pack(len(payload)) + payload

    def encode_many(self, payloads) -> bytes:
        return b"".join(self.encode(p) for p in payloads)

    async def read_frame(self, reader: asyncio.StreamReader) -> bytes | None:
        """Return the next frame, or None on a clean EOF at a frame boundary."""
        try:
            header = await reader.readexactly(self.header_size)
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                return None
            raise IncompleteFrame(self.header_size, exc.partial) from None
        (size,) = _HEADER.unpack(header)
        if size > self.max_size:
            raise FrameTooLarge(size, self.max_size)
        try:
            return await reader.readexactly(size)
        except asyncio.IncompleteReadError as exc:
            raise IncompleteFrame(size, exc.partial) from None

    async def write_frame(self, writer: asyncio.StreamWriter, payload: bytes) -> None:
        writer.write(self.encode(payload))
        await writer.drain()

    def decode_buffer(self, buffer: bytearray) -> list[bytes]:
        """Pop every complete frame from buffer (for Protocol-based users)."""
        frames = []
        while len(buffer) >= self.header_size:
            (size,) = _HEADER.unpack_from(buffer)
            if size > self.max_size:
                raise FrameTooLarge(size, self.max_size)
            end = self.header_size + size
            if len(buffer) < end:
                break
            frames.append(bytes(buffer[self.header_size:end]))
            del buffer[:end]
        return frames


class LineCodec:
    """Newline-terminated text lines, with a maximum line length."""

    def __init__(self, max_line: int = 8192, encoding: str = "utf-8") -> None:
        self.max_line = max_line
        self.encoding = encoding

    def encode(self, line: str) -> bytes:
        if "\n" in line or "\r" in line:
            raise ValueError("a line may not contain CR or LF")
        data = line.encode(self.encoding) + b"\r\n"
        if len(data) > self.max_line:
            raise FrameTooLarge(len(data), self.max_line)
        return data

    async def read_line(self, reader: asyncio.StreamReader) -> str | None:
        try:
            raw = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                return None
            raise IncompleteFrame(len(exc.partial) + 1, exc.partial) from None
        except asyncio.LimitOverrunError as exc:
            raise FrameTooLarge(exc.consumed, self.max_line) from None
        if len(raw) > self.max_line:
            raise FrameTooLarge(len(raw), self.max_line)
        try:
            return raw.decode(self.encoding).rstrip("\r\n")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"undecodable line: {exc}") from None

    async def write_line(self, writer: asyncio.StreamWriter, line: str) -> None:
        writer.write(self.encode(line))
        await writer.drain()
