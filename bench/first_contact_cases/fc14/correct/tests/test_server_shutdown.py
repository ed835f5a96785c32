import asyncio
import logging
import time

import pytest

import wire
from wire.server import Server, line_echo_handler

from conftest import EPS


@pytest.mark.asyncio
async def test_close_waits_for_an_in_flight_handler():
    started = asyncio.Event()

    async def slow_reply(reader, writer):
        line = await reader.readline()
        started.set()
        await asyncio.sleep(0.05)
        writer.write(line.upper())
        await writer.drain()

    server = await wire.serve_tcp(slow_reply, name="slow")
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(b"work\n")
        await asyncio.wait_for(started.wait(), 20)
        closing = asyncio.create_task(server.close(grace=20))
        assert await asyncio.wait_for(reader.readline(), 20) == b"WORK\n"
        await asyncio.wait_for(closing, 20)
        assert (server.completed, server.cancelled, server.active) == (1, 0, 0)
    finally:
        writer.close()
        await writer.wait_closed()
        await server.close()


@pytest.mark.asyncio
async def test_grace_period_expiry_cancels_stuck_handlers():
    started = asyncio.Event()

    async def stuck(reader, writer):
        started.set()
        await asyncio.sleep(3600)

    server = await wire.serve_tcp(stuck, name="stuck")
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        await asyncio.wait_for(started.wait(), 20)
        t0 = time.monotonic()
        await asyncio.wait_for(server.close(grace=0.05), 20)
        assert time.monotonic() - t0 >= 0.05 - EPS
        assert server.cancelled == 1 and server.completed == 0
        assert await asyncio.wait_for(reader.read(), 20) == b""
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.asyncio
async def test_idle_keepalive_connections_are_closed_on_shutdown(echo_server):
    conns = [await asyncio.open_connection("127.0.0.1", echo_server.port) for _ in range(3)]
    try:
        for reader, writer in conns:
            writer.write(b"hi\n")
            assert await asyncio.wait_for(reader.readline(), 20) == b"hi\r\n"
        assert echo_server.active == 3
        await asyncio.wait_for(echo_server.close(grace=0.02), 20)
        for reader, _ in conns:
            assert await asyncio.wait_for(reader.read(), 20) == b""
        assert echo_server.cancelled == 3
    finally:
        for _, writer in conns:
            writer.close()
            await writer.wait_closed()


@pytest.mark.asyncio
async def test_no_new_connections_after_close(echo_server):
    port = echo_server.port
    await echo_server.close()
    assert echo_server.sockets == ()
    with pytest.raises(ConnectionRefusedError):
        await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 20)


@pytest.mark.asyncio
async def test_close_is_idempotent(echo_server):
    await echo_server.close()
    await echo_server.close()
    assert echo_server.closed


@pytest.mark.asyncio
async def test_context_manager_closes():
    async with await wire.serve_tcp(line_echo_handler, name="ctx") as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:
            writer.write(b"QUIT\n")
            assert await asyncio.wait_for(reader.readline(), 20) == b"BYE\r\n"
        finally:
            writer.close()
            await writer.wait_closed()
    assert server.closed and wire.live_servers().count(server) == 0


@pytest.mark.asyncio
async def test_handler_error_is_logged_and_the_server_keeps_serving(caplog):
    async def picky(reader, writer):
        line = await reader.readline()
        if line == b"bad\n":
            raise ValueError("cannot handle that")
        writer.write(b"fine\n")
        await writer.drain()

    async with await wire.serve_tcp(picky, name="picky") as server:
        for payload, expected in [(b"bad\n", b""), (b"good\n", b"fine\n")]:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(payload)
            assert await asyncio.wait_for(reader.readline(), 20) == expected
            writer.close()
            await writer.wait_closed()
        assert [type(e) for e in server.errors] == [ValueError]
    assert any(r.levelno == logging.ERROR and "handler failed" in r.getMessage()
               for r in caplog.records)


@pytest.mark.asyncio
async def test_client_dropping_mid_request_is_not_an_error():
    done = asyncio.Event()

    async def wants_ten(reader, writer):
        try:
            await reader.readexactly(10)
        finally:
            done.set()

    async with await wire.serve_tcp(wants_ten, name="ten") as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"abc")
        writer.close()
        await writer.wait_closed()
        await asyncio.wait_for(done.wait(), 20)
    assert server.errors == [] and server.completed == 0


@pytest.mark.asyncio
async def test_connection_arriving_during_shutdown_is_closed():
    server = Server(line_echo_handler, name="late")
    await server.start_tcp()
    server._closing = True  # as if close() had begun while this connection was being accepted
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        assert await asyncio.wait_for(reader.read(), 20) == b""
        writer.close()
        await writer.wait_closed()
        assert server.accepted == 0
    finally:
        await server.close()
