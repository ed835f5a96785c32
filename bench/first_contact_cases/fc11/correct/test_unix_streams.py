"""A framed control protocol over a Unix socket, like a local daemon's admin API
(supervisord-, docker- or containerd-style control sockets): length-prefixed
frames read with ``readexactly``, text commands read with ``readuntil``, and a
small reader ``limit`` that rejects oversized lines.
"""
import asyncio

import pytest

pytestmark = pytest.mark.asyncio


class ControlServer:
    def __init__(self):
        self.clients = 0
        self.errors = []

    async def handle(self, reader, writer):
        self.clients += 1
        try:
            while True:
                try:
                    header = await reader.readexactly(4)
                except asyncio.IncompleteReadError as exc:
                    if exc.partial:
                        self.errors.append(("header", len(exc.partial)))
                    break
                size = int.from_bytes(header, "big")
                try:
                    body = await reader.readexactly(size)
                except asyncio.IncompleteReadError as exc:
                    self.errors.append(("body", len(exc.partial), exc.expected))
                    writer.write(b"ERR truncated\r\n")
                    await writer.drain()
                    break
                writer.write(b"OK " + body.upper() + b"\r\n")
                await writer.drain()
        finally:
            writer.close()
            await writer.wait_closed()


async def start(tmp_path, ctl):
    path = str(tmp_path / "ctl.sock")
    server = await asyncio.start_unix_server(ctl.handle, path=path)
    return server, path


async def stop(server):
    server.close()
    await server.wait_closed()


def frame(body):
    return len(body).to_bytes(4, "big") + body


async def test_frames_roundtrip(tmp_path):
    ctl = ControlServer()
    server, path = await start(tmp_path, ctl)
    try:
        reader, writer = await asyncio.open_unix_connection(path)
        for cmd in (b"status", b"reload", b"stop web"):
            writer.write(frame(cmd))
        await writer.drain()
        replies = [await asyncio.wait_for(reader.readuntil(b"\r\n"), 20) for _ in range(3)]
        assert replies == [b"OK STATUS\r\n", b"OK RELOAD\r\n", b"OK STOP WEB\r\n"]
        writer.close()
        await writer.wait_closed()
    finally:
        await stop(server)
    assert ctl.errors == []


async def test_truncated_frame_reports_incomplete_read(tmp_path):
    ctl = ControlServer()
    server, path = await start(tmp_path, ctl)
    try:
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write((10).to_bytes(4, "big") + b"only6b")
        writer.write_eof()
        assert await asyncio.wait_for(reader.readuntil(b"\r\n"), 20) == b"ERR truncated\r\n"
        assert await asyncio.wait_for(reader.read(), 20) == b""
        assert reader.at_eof()
        writer.close()
        await writer.wait_closed()
    finally:
        await stop(server)
    assert ctl.errors == [("body", 6, 10)]


async def test_client_limit_rejects_long_line(tmp_path):
    path = str(tmp_path / "banner.sock")

    async def banner(reader, writer):
        writer.write(b"X" * 100 + b"\r\nshort\r\n")
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_unix_server(banner, path=path)
    try:
        reader, writer = await asyncio.open_unix_connection(path, limit=32)
        with pytest.raises(asyncio.LimitOverrunError) as excinfo:
            await asyncio.wait_for(reader.readuntil(b"\r\n"), 20)
        assert excinfo.value.consumed >= 32
        # The oversized data is still buffered: skip it explicitly.
        await reader.readexactly(102)
        assert await asyncio.wait_for(reader.readuntil(b"\r\n"), 20) == b"short\r\n"
        writer.close()
        await writer.wait_closed()
    finally:
        await stop(server)


async def test_stream_reader_fed_directly():
    reader = asyncio.StreamReader(limit=16)
    reader.feed_data(b"abc\r\n")
    reader.feed_data(b"y" * 20)
    assert await reader.readuntil(b"\r\n") == b"abc\r\n"
    with pytest.raises(asyncio.LimitOverrunError):
        await reader.readuntil(b"\r\n")
    assert await reader.readexactly(20) == b"y" * 20
    reader.feed_data(b"tail")
    reader.feed_eof()
    assert not reader.at_eof()  # "tail" is still buffered
    with pytest.raises(asyncio.IncompleteReadError) as excinfo:
        await reader.readexactly(100)
    assert excinfo.value.expected == 100
    assert excinfo.value.partial == b"tail"
    assert reader.at_eof()


async def test_concurrent_clients_each_get_their_replies(tmp_path):
    ctl = ControlServer()
    server, path = await start(tmp_path, ctl)

    async def client(i):
        reader, writer = await asyncio.open_unix_connection(path)
        try:
            out = []
            for j in range(3):
                writer.write(frame(f"c{i}-{j}".encode()))
                await writer.drain()
                out.append(await reader.readuntil(b"\r\n"))
            return out
        finally:
            writer.close()
            await writer.wait_closed()

    try:
        results = await asyncio.wait_for(asyncio.gather(*(client(i) for i in range(4))), 20)
    finally:
        await stop(server)
    for i, replies in enumerate(results):
        assert replies == [f"OK C{i}-{j}\r\n".encode() for j in range(3)]
    assert ctl.clients == 4
