import asyncio
import ssl
import time

import pytest
import pytest_asyncio

import wire
from wire import tls
from wire.server import line_echo_handler

from conftest import EPS


@pytest_asyncio.fixture
async def tls_echo(server_ssl):
    server = await wire.serve_tcp(line_echo_handler, name="tls-echo", ssl=server_ssl)
    yield server
    await server.close()


@pytest_asyncio.fixture
async def starttls_server(server_ssl):
    handler = tls.StartTlsHandler(server_ssl, handshake_timeout=20)
    server = await wire.serve_tcp(handler, name="starttls")
    yield server, handler
    await server.close()


@pytest.mark.asyncio
async def test_tls_echo_and_peer_certificate(tls_echo, client_ssl, open_streams):
    reader, writer = await open_streams("127.0.0.1", tls_echo.port, ssl=client_ssl,
                                        server_hostname="localhost")
    assert await tls.request_line(reader, writer, "secret") == "secret"
    cert = writer.get_extra_info("peercert")
    assert dict(x[0] for x in cert["subject"])["commonName"] == "localhost"
    assert writer.get_extra_info("cipher") is not None
    assert writer.get_extra_info("ssl_object").version().startswith("TLS")


@pytest.mark.asyncio
async def test_lines_stay_in_order_over_one_tls_connection(tls_echo, client_ssl, open_streams):
    reader, writer = await open_streams("127.0.0.1", tls_echo.port, ssl=client_ssl,
                                        server_hostname="localhost")
    writer.write(b"".join(f"line {i}\r\n".encode() for i in range(30)))
    await writer.drain()
    got = [(await asyncio.wait_for(reader.readline(), 20)).decode().strip() for _ in range(30)]
    assert got == [f"line {i}" for i in range(30)]


@pytest.mark.asyncio
async def test_wrong_hostname_is_rejected(tls_echo, client_ssl):
    with pytest.raises(ssl.SSLCertVerificationError):
        await asyncio.wait_for(asyncio.open_connection(
            "127.0.0.1", tls_echo.port, ssl=client_ssl, server_hostname="not-localhost.example"), 20)


@pytest.mark.asyncio
async def test_untrusted_certificate_is_rejected(tls_echo):
    with pytest.raises(ssl.SSLCertVerificationError):
        await asyncio.wait_for(asyncio.open_connection(
            "127.0.0.1", tls_echo.port, ssl=tls.client_context(), server_hostname="localhost"), 20)


@pytest.mark.asyncio
async def test_handshake_timeout_against_a_silent_server(client_ssl):
    async def silent(reader, writer):
        await reader.read()

    async with await wire.serve_tcp(silent, name="silent") as server:
        t0 = time.monotonic()
        with pytest.raises(ConnectionAbortedError):
            await asyncio.wait_for(asyncio.open_connection(
                "127.0.0.1", server.port, ssl=client_ssl, server_hostname="localhost",
                ssl_handshake_timeout=0.1), 20)
        assert time.monotonic() - t0 >= 0.1 - EPS


@pytest.mark.asyncio
async def test_plaintext_dialogue_before_upgrade(starttls_server, open_streams):
    server, handler = starttls_server
    reader, writer = await open_streams("127.0.0.1", server.port)
    assert (await reader.readline()).startswith(b"220 ")
    assert await tls.request_line(reader, writer, "TLS?") == "250 no"
    assert await tls.request_line(reader, writer, "abc") == "cba"
    assert await tls.request_line(reader, writer, "QUIT") == "221 bye"
    assert handler.upgraded == 0


@pytest.mark.asyncio
async def test_starttls_upgrade(starttls_server, client_ssl):
    server, handler = starttls_server
    reader, writer = await asyncio.wait_for(tls.starttls_connect(
        "127.0.0.1", server.port, client_ssl, server_hostname="localhost", handshake_timeout=20), 20)
    try:
        assert writer.get_extra_info("ssl_object") is not None
        assert await tls.request_line(reader, writer, "TLS?") == "250 yes"
        assert await tls.request_line(reader, writer, "private") == "etavirp"
        assert await tls.request_line(reader, writer, "QUIT") == "221 bye"
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, ssl.SSLError):
            pass
    assert handler.upgraded == 1
    assert handler.lines_over_tls == ["private"]


@pytest.mark.asyncio
async def test_starttls_with_untrusted_server_fails(starttls_server):
    server, handler = starttls_server
    with pytest.raises(ssl.SSLCertVerificationError):
        await asyncio.wait_for(tls.starttls_connect(
            "127.0.0.1", server.port, tls.client_context(), server_hostname="localhost"), 20)


@pytest.mark.asyncio
async def test_tls_over_a_unix_socket(tmp_path, server_ssl, client_ssl):
    path = str(tmp_path / "tls.sock")
    async with await wire.serve_unix(line_echo_handler, path, name="unix-tls", ssl=server_ssl):
        reader, writer = await asyncio.open_unix_connection(path, ssl=client_ssl,
                                                            server_hostname="localhost")
        try:
            assert await tls.request_line(reader, writer, "UPPER") == "OK"
            assert await tls.request_line(reader, writer, "quiet") == "QUIET"
        finally:
            writer.close()
            await writer.wait_closed()


@pytest.mark.asyncio
async def test_server_handler_completes_after_client_quits(tls_echo, client_ssl, open_streams):
    reader, writer = await open_streams("127.0.0.1", tls_echo.port, ssl=client_ssl,
                                        server_hostname="localhost")
    assert await tls.request_line(reader, writer, "QUIT") == "BYE"
    assert await asyncio.wait_for(reader.read(), 20) == b""

    async def until_completed():
        while tls_echo.completed < 1:
            await asyncio.sleep(0.005)

    await asyncio.wait_for(until_completed(), 20)
    assert tls_echo.accepted == 1 and tls_echo.errors == []
