"""The same servers driven through anyio's socket API (asyncio backend)."""
import anyio
import pytest

import wire
from wire.datagram import UdpReplyServer
from wire.server import line_echo_handler

from conftest import EPS

pytestmark = pytest.mark.anyio


async def test_anyio_listener_and_client():
    received = []

    async def handle(stream):
        async with stream:
            data = await stream.receive()
            received.append(data)
            await stream.send(data[::-1])

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        async with await anyio.connect_tcp("127.0.0.1", port) as client:
            await client.send(b"abc")
            with anyio.fail_after(20):
                assert await client.receive() == b"cba"
        tg.cancel_scope.cancel()
    assert received == [b"abc"]


async def test_anyio_client_against_a_wire_server():
    async with await wire.serve_tcp(line_echo_handler, name="anyio-echo") as server:
        async with await anyio.connect_tcp("127.0.0.1", server.port) as client:
            await client.send(b"UPPER\nmixed Case\n")
            buf = b""
            with anyio.fail_after(20):
                while buf.count(b"\n") < 2:
                    buf += await client.receive()
            assert buf == b"OK\r\nMIXED CASE\r\n"


async def test_fail_after_on_a_silent_peer():
    async def silent(reader, writer):
        await reader.read()

    async with await wire.serve_tcp(silent, name="anyio-silent") as server:
        async with await anyio.connect_tcp("127.0.0.1", server.port) as client:
            t0 = anyio.current_time()
            with pytest.raises(TimeoutError):
                with anyio.fail_after(0.05):
                    await client.receive()
            assert anyio.current_time() - t0 >= 0.05 - EPS


async def test_anyio_unix_client(tmp_path):
    path = str(tmp_path / "anyio.sock")
    async with await wire.serve_unix(line_echo_handler, path, name="anyio-unix"):
        async with await anyio.connect_unix(path) as client:
            await client.send(b"via anyio\n")
            with anyio.fail_after(20):
                assert await client.receive() == b"via anyio\r\n"


async def test_anyio_tls_client(server_ssl, client_ssl):
    async with await wire.serve_tcp(line_echo_handler, name="anyio-tls", ssl=server_ssl) as server:
        client = await anyio.connect_tcp("127.0.0.1", server.port, ssl_context=client_ssl,
                                         tls_hostname="localhost", tls_standard_compatible=False)
        async with client:
            await client.send(b"QUIT\n")
            with anyio.fail_after(20):
                assert await client.receive() == b"BYE\r\n"


async def test_anyio_udp_against_a_wire_datagram_server():
    import asyncio

    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_datagram_endpoint(
        lambda: UdpReplyServer(), local_addr=("127.0.0.1", 0))
    try:
        host, port = transport.get_extra_info("sockname")
        async with await anyio.create_connected_udp_socket(host, port) as udp:
            reply = None
            with anyio.fail_after(20):
                while reply is None:  # UDP: resend until answered
                    await udp.send(b"7:quiet")
                    with anyio.move_on_after(0.2):
                        reply = await udp.receive()
            assert reply == b"7:QUIET"
    finally:
        transport.close()
