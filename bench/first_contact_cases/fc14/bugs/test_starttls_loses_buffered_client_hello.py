"""STARTTLS upgrade loses the TLS ClientHello that was already buffered in the StreamReader.

Report: https://github.com/python/cpython/issues/142352 ("asyncio: start_tls() loses buffered data
from StreamReader", fixed by https://github.com/python/cpython/pull/142354; also reported against
uvloop, https://github.com/MagicStack/uvloop/issues/707).  Paraphrase: when a server upgrades a
stream with ``StreamWriter.start_tls()``, bytes the plaintext StreamReader has already received are
not handed to the new SSL protocol.  If the client's first TLS record arrived before the upgrade
began, the handshake waits for a ClientHello that was already consumed and hangs. This uses stock
Python 3.11 ``StreamWriter.start_tls`` itself (3.11 does not have the fix).

Model: a STARTTLS line server.  After answering ``220 go ahead`` it looks up the TLS context in its
certificate store (an await that is normally satisfied from a cache, CERT_LOOKUP) and then upgrades.
The client upgrades as soon as it reads the ``220``.
"""
import asyncio
import pathlib
import ssl

import pytest

CERT_LOOKUP = 0.0          # the certificate store answers from its cache
HANDSHAKE_TIMEOUT = 2.0
CERTS = pathlib.Path(__file__).parent / "certs"


class CertStore:
    def __init__(self):
        self._ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._ctx.load_cert_chain(CERTS / "cert.pem", CERTS / "key.pem")

    async def context_for(self, name):
        await asyncio.sleep(CERT_LOOKUP)
        return self._ctx


async def run_server_session(store, reader, writer, result):
    writer.write(b"220 ready\r\n")
    await writer.drain()
    assert await reader.readline() == b"STARTTLS\r\n"
    writer.write(b"220 go ahead\r\n")
    await writer.drain()
    ctx = await store.context_for("localhost")
    await writer.start_tls(ctx, ssl_handshake_timeout=HANDSHAKE_TIMEOUT)
    line = await reader.readline()
    writer.write(b"250 " + line[::-1].strip() + b"\r\n")
    await writer.drain()
    result.set_result(line)


@pytest.mark.asyncio
async def test_starttls_upgrade_roundtrip():
    store = CertStore()
    loop = asyncio.get_running_loop()
    server_result = loop.create_future()
    handlers = []

    async def handler(reader, writer):
        handlers.append(writer)
        try:
            await run_server_session(store, reader, writer, server_result)
        except Exception as exc:
            if not server_result.done():
                server_result.set_exception(exc)

    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    client_ctx = ssl.create_default_context(cafile=str(CERTS / "cert.pem"))
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    try:
        assert (await reader.readline()).startswith(b"220")
        writer.write(b"STARTTLS\r\n")
        await writer.drain()
        assert await reader.readline() == b"220 go ahead\r\n"
        await writer.start_tls(client_ctx, server_hostname="localhost",
                               ssl_handshake_timeout=HANDSHAKE_TIMEOUT)
        writer.write(b"secret\r\n")
        await writer.drain()
        assert await asyncio.wait_for(reader.readline(), 5) == b"250 terces\r\n"
        assert await asyncio.wait_for(server_result, 5) == b"secret\r\n"
    finally:
        writer.close()
        for w in handlers:
            w.close()
        server.close()
        await server.wait_closed()
