"""Chunked transfer-encoding in both directions over asyncio streams.

This imitates the streaming tests of HTTP client and server libraries:
aiohttp's ``StreamResponse``, httpx ``aiter_bytes``, and h11-based servers.  The
server streams chunks with pauses between them and can append trailers.  The
client parses chunk framing incrementally, uploads a chunked body from an async
generator, reuses the keep-alive connection after a stream, and the server
notices when the client goes away mid-stream.
"""

import asyncio
import hashlib
import time

import pytest
import pytest_asyncio


def encode_chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


class StreamingServer:
    def __init__(self):
        self.stream_aborted = asyncio.Event()
        self.uploads = []
        self._tasks = set()
        self._writers = set()

    async def start(self):
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self):
        self._server.close()
        await self._server.wait_closed()
        for w in list(self._writers):
            w.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _read_chunked(self, reader):
        body = bytearray()
        while True:
            size = int((await reader.readline()).split(b";", 1)[0], 16)
            data = await reader.readexactly(size + 2)
            if size == 0:
                return bytes(body)
            body += data[:-2]

    async def _handle(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                method, path, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
                if method == "POST":
                    body = await self._read_chunked(reader)
                    self.uploads.append(body)
                    digest = hashlib.sha256(body).hexdigest().encode()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(digest), digest))
                    await writer.drain()
                elif path.startswith("/numbers/"):
                    count, pause_ms = (int(x) for x in path.split("/")[2:4])
                    writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                                 b"Trailer: X-Checksum\r\n\r\n")
                    digest = hashlib.sha256()
                    for n in range(count):
                        await asyncio.sleep(pause_ms / 1000)
                        chunk = f"{n}:{'x' * n}|".encode()
                        digest.update(chunk)
                        writer.write(encode_chunk(chunk))
                        await writer.drain()
                    writer.write(b"0\r\nX-Checksum: %s\r\n\r\n" % digest.hexdigest().encode())
                    await writer.drain()
                elif path == "/forever":
                    await self._stream_until_client_leaves(reader, writer)
                    return
        finally:
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(asyncio.current_task())

    async def _stream_until_client_leaves(self, reader, writer):
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")

        async def produce():
            n = 0
            while True:
                writer.write(encode_chunk(b"tick %d\n" % n))
                await writer.drain()
                n += 1
                await asyncio.sleep(0.05)

        producer = asyncio.create_task(produce())
        try:
            # The client never sends more data; EOF (or a reset) means it went away.
            try:
                await reader.read()
            except ConnectionError:
                pass
        finally:
            producer.cancel()
            await asyncio.gather(producer, return_exceptions=True)
            self.stream_aborted.set()


class ChunkedResponse:
    def __init__(self, reader, status, headers):
        self.reader, self.status, self.headers = reader, status, headers
        self.trailers = {}

    async def iter_chunks(self):
        while True:
            size = int((await self.reader.readline()).split(b";", 1)[0], 16)
            if size == 0:
                while True:
                    line = await self.reader.readline()
                    if line == b"\r\n":
                        return
                    k, _, v = line.decode().partition(":")
                    self.trailers[k.strip().lower()] = v.strip()
            data = await self.reader.readexactly(size + 2)
            yield data[:-2]


async def open_stream(reader, writer, path):
    writer.write(f"GET {path} HTTP/1.1\r\nHost: s\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        if line:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
    return ChunkedResponse(reader, int(lines[0].split()[1]), headers)


@pytest_asyncio.fixture
async def server():
    srv = await StreamingServer().start()
    yield srv
    await srv.close()


@pytest_asyncio.fixture
async def connection(server):
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    yield reader, writer
    writer.close()
    await writer.wait_closed()


@pytest.mark.asyncio
async def test_chunk_boundaries_and_trailer_checksum(connection):
    reader, writer = connection
    response = await asyncio.wait_for(open_stream(reader, writer, "/numbers/5/0"), 10)
    assert response.headers["transfer-encoding"] == "chunked"
    chunks = [c async for c in response.iter_chunks()]
    assert chunks == [f"{n}:{'x' * n}|".encode() for n in range(5)]
    assert response.trailers["x-checksum"] == hashlib.sha256(b"".join(chunks)).hexdigest()


@pytest.mark.asyncio
async def test_chunks_arrive_no_earlier_than_the_server_sends_them(connection):
    reader, writer = connection
    started = time.monotonic()
    response = await asyncio.wait_for(open_stream(reader, writer, "/numbers/4/150"), 10)
    arrivals = []
    async for _ in response.iter_chunks():
        arrivals.append(time.monotonic() - started)
    assert len(arrivals) == 4
    for n, at in enumerate(arrivals, start=1):
        # chunk n is written after n pauses of 150 ms
        assert at >= n * 0.15 - 0.01
    assert arrivals == sorted(arrivals)
    assert arrivals[-1] < 20 * 0.6


@pytest.mark.asyncio
async def test_chunked_upload_from_async_generator(server, connection):
    reader, writer = connection

    async def body_parts():
        for n in range(5):
            await asyncio.sleep(0.1)
            yield bytes([n]) * (10_000 * (n + 1))

    writer.write(b"POST /upload HTTP/1.1\r\nHost: s\r\nTransfer-Encoding: chunked\r\n\r\n")
    expected = hashlib.sha256()
    async for part in body_parts():
        expected.update(part)
        writer.write(encode_chunk(part))
        await writer.drain()
    writer.write(b"0\r\n\r\n")
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
    digest = await asyncio.wait_for(reader.readexactly(length), 10)
    assert digest.decode() == expected.hexdigest()
    assert len(server.uploads) == 1 and len(server.uploads[0]) == 150_000


@pytest.mark.asyncio
async def test_connection_is_reused_after_a_stream(connection):
    reader, writer = connection
    local = writer.get_extra_info("sockname")
    first = await asyncio.wait_for(open_stream(reader, writer, "/numbers/3/10"), 10)
    assert len([c async for c in first.iter_chunks()]) == 3
    await asyncio.sleep(0.5)
    second = await asyncio.wait_for(open_stream(reader, writer, "/numbers/2/10"), 10)
    assert [c async for c in second.iter_chunks()] == [b"0:|", b"1:x|"]
    assert writer.get_extra_info("sockname") == local


@pytest.mark.asyncio
async def test_server_stops_streaming_when_client_disconnects(server):
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    response = await asyncio.wait_for(open_stream(reader, writer, "/forever"), 10)
    received = []
    async for chunk in response.iter_chunks():
        received.append(chunk)
        if len(received) == 3:
            break
    writer.close()
    await writer.wait_closed()
    await asyncio.wait_for(server.stream_aborted.wait(), 10)
    assert received == [b"tick 0\n", b"tick 1\n", b"tick 2\n"]
