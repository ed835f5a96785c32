"""Unix domain sockets, the loop.sock_* API, sendfile and socketpairs."""
import asyncio
import hashlib
import os
import socket

import pytest
import pytest_asyncio

import wire
from wire.lowlevel import SockEchoServer, drain_and_close, nonblocking_socket, send_file, sock_request
from wire.server import line_echo_handler
from wire.tls import request_line


@pytest_asyncio.fixture
async def unix_echo(tmp_path):
    path = str(tmp_path / "echo.sock")
    server = await wire.serve_unix(line_echo_handler, path, name="unix-echo")
    yield path, server
    await server.close()


async def hashing_handler(reader, writer):
    """Read until EOF, answer with '<length> <sha256>'."""
    h = hashlib.sha256()
    n = 0
    while chunk := await reader.read(65536):
        h.update(chunk)
        n += len(chunk)
    writer.write(f"{n} {h.hexdigest()}\n".encode())
    await writer.drain()


@pytest.mark.asyncio
async def test_unix_socket_echo(unix_echo):
    path, server = unix_echo
    reader, writer = await asyncio.open_unix_connection(path)
    try:
        assert await request_line(reader, writer, "over unix") == "over unix"
        assert writer.get_extra_info("peername") == path
    finally:
        await drain_and_close(writer)


@pytest.mark.asyncio
async def test_two_unix_clients_each_get_their_own_replies(unix_echo):
    path, server = unix_echo
    (r1, w1), (r2, w2) = await asyncio.gather(asyncio.open_unix_connection(path),
                                             asyncio.open_unix_connection(path))
    try:
        got = await asyncio.wait_for(asyncio.gather(
            request_line(r1, w1, "a0"),
            request_line(r2, w2, "UPPER"),
        ), 20)
        assert got == ["a0", "OK"]
        assert await request_line(r2, w2, "b") == "B"
        assert await request_line(r1, w1, "c") == "c"
    finally:
        await drain_and_close(w1)
        await drain_and_close(w2)


@pytest.mark.asyncio
async def test_sock_api_roundtrip():
    async with SockEchoServer() as server:
        assert await asyncio.wait_for(sock_request(server.address, b"raw bytes"), 20) == b"raw bytes"


@pytest.mark.asyncio
async def test_sock_api_large_payload():
    payload = os.urandom(300 * 1024)
    async with SockEchoServer() as server:
        echoed = await asyncio.wait_for(sock_request(server.address, payload), 20)
    assert echoed == payload


@pytest.mark.asyncio
async def test_sock_api_over_a_unix_socket(tmp_path):
    path = str(tmp_path / "raw.sock")
    async with SockEchoServer(socket.AF_UNIX, path) as server:
        got = await asyncio.wait_for(sock_request(path, b"unix raw", family=socket.AF_UNIX), 20)
        assert got == b"unix raw"
    assert server.served == 1


@pytest.mark.asyncio
async def test_sock_recv_into_reads_an_exact_count():
    loop = asyncio.get_running_loop()
    async with SockEchoServer() as server:
        with nonblocking_socket() as sock:
            await loop.sock_connect(sock, server.address)
            await loop.sock_sendall(sock, b"0123456789")
            buf = bytearray(10)
            view = memoryview(buf)
            got = 0
            while got < 10:
                n = await asyncio.wait_for(loop.sock_recv_into(sock, view[got:]), 20)
                assert n > 0
                got += n
            assert bytes(buf) == b"0123456789"


@pytest.mark.asyncio
async def test_connect_to_a_socket_that_is_not_listening():
    loop = asyncio.get_running_loop()
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))  # bound but not listening: connections are refused
        with nonblocking_socket() as sock:
            with pytest.raises(ConnectionRefusedError):
                await asyncio.wait_for(loop.sock_connect(sock, bound.getsockname()), 20)


@pytest.mark.asyncio
async def test_sendfile_whole_file(tmp_path):
    data = os.urandom(700 * 1024)
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    async with await wire.serve_tcp(hashing_handler, name="hash") as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            sent = await send_file(writer, path)
            writer.write_eof()
            line = await asyncio.wait_for(reader.readline(), 20)
        finally:
            await drain_and_close(writer)
    assert sent == len(data)
    assert line.decode().split() == [str(len(data)), hashlib.sha256(data).hexdigest()]


@pytest.mark.asyncio
async def test_sendfile_with_offset_and_count(tmp_path):
    data = bytes(range(256)) * 64
    path = tmp_path / "slice.bin"
    path.write_bytes(data)
    async with await wire.serve_tcp(hashing_handler, name="hash") as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            writer.write(b"HEAD")
            sent = await send_file(writer, path, offset=1000, count=5000)
            writer.write(b"TAIL")
            writer.write_eof()
            line = await asyncio.wait_for(reader.readline(), 20)
        finally:
            await drain_and_close(writer)
    expected = b"HEAD" + data[1000:6000] + b"TAIL"
    assert sent == 5000
    assert line.decode().split() == [str(len(expected)), hashlib.sha256(expected).hexdigest()]


@pytest.mark.asyncio
async def test_streams_over_a_socketpair():
    left, right = socket.socketpair()
    r1, w1 = await asyncio.open_connection(sock=left)
    r2, w2 = await asyncio.open_connection(sock=right)
    try:
        w1.write(b"ping\n")
        await w1.drain()
        assert await asyncio.wait_for(r2.readline(), 20) == b"ping\n"
        w2.write(b"pong\n")
        w2.write_eof()
        assert await asyncio.wait_for(r1.read(), 20) == b"pong\n"
    finally:
        await drain_and_close(w1)
        await drain_and_close(w2)
