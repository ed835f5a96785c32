"""Real TCP sockets: asyncio.start_server on an ephemeral port with a client."""
import asyncio

import pytest


async def echo_upper(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        writer.write(line.upper())
        await writer.drain()
    writer.close()
    await writer.wait_closed()


@pytest.mark.asyncio
async def test_echo_roundtrip():
    server = await asyncio.start_server(echo_upper, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    assert port != 0
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for word in (b"alpha\n", b"beta\n", b"gamma\n"):
            writer.write(word)
            await writer.drain()
            assert await asyncio.wait_for(reader.readline(), 5) == word.upper()
        writer.close()
        await writer.wait_closed()


@pytest.mark.asyncio
async def test_many_concurrent_clients():
    server = await asyncio.start_server(echo_upper, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def client(i):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"client{i}\n".encode())
        await writer.drain()
        reply = await asyncio.wait_for(reader.readline(), 5)
        writer.close()
        await writer.wait_closed()
        return reply

    async with server:
        replies = await asyncio.gather(*(client(i) for i in range(20)))
    assert replies == [f"CLIENT{i}\n".encode() for i in range(20)]


@pytest.mark.asyncio
async def test_eof_seen_after_server_closes():
    async def one_shot(reader, writer):
        writer.write(b"bye\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(one_shot, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(reader.read(), 5) == b"bye\n"
        assert reader.at_eof()
        writer.close()
        await writer.wait_closed()
