"""Input for tests/test_cannot_lie.py: a race-free request over a real socket under a 30 s timeout.

It passes under plain pytest every time. A background sleep ends 10 us before the timeout: a
machine that stalls the request's steps for nearly 30 s lands just short of the timeout, and the
socket's answer then takes longer than what is left -- a slow machine, not a race (aiohttp's 301 s
total timeout in aresponses' suite, reached the same way). Never a plain failure.
"""

import asyncio

import pytest


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    data = await reader.readline()
    writer.write(data.upper())
    await writer.drain()
    writer.close()


@pytest.mark.asyncio
async def test_a_request_well_within_its_timeout() -> None:
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    ticker = asyncio.create_task(asyncio.sleep(29.99999))  # a timer 10 us short of the timeout
    try:
        async with asyncio.timeout(30):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"ping\n")
            await writer.drain()
            assert await reader.readline() == b"PING\n"
            writer.close()
            await writer.wait_closed()
    finally:
        ticker.cancel()
        server.close()
        await server.wait_closed()
