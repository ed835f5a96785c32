"""Fixtures shared by the wire suite: certificates, servers on port 0, leak checks."""
import asyncio
import json
import logging
import pathlib
import ssl

import pytest
import pytest_asyncio

import wire
from wire.framing import LengthPrefixedCodec
from wire.rpc import RpcServerHandler, demo_methods
from wire.server import line_echo_handler
from wire import tls

CERTS = pathlib.Path(__file__).parent / "certs"
EPS = 0.010


@pytest.fixture(scope="session")
def cert_paths():
    return {"cert": str(CERTS / "cert.pem"), "key": str(CERTS / "key.pem")}


@pytest.fixture(scope="session")
def server_ssl(cert_paths) -> ssl.SSLContext:
    return tls.server_context(cert_paths["cert"], cert_paths["key"])


@pytest.fixture(scope="session")
def client_ssl(cert_paths) -> ssl.SSLContext:
    return tls.client_context(cafile=cert_paths["cert"])


@pytest.fixture(autouse=True)
def _wire_debug_logging(caplog):
    caplog.set_level(logging.DEBUG, logger="wire")
    yield


@pytest.fixture(autouse=True)
def _no_leaked_servers():
    """Fail a test that leaves a wire.Server open (shared, module-scoped servers excepted)."""
    before = {id(s) for s in wire.live_servers()}
    yield
    leaked = [s for s in wire.live_servers()
              if id(s) not in before and not getattr(s, "shared", False)]
    assert not leaked, f"servers left open: {[s.name for s in leaked]}"


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def frame_echo_handler(reader, writer):
    codec = LengthPrefixedCodec()
    while True:
        frame = await codec.read_frame(reader)
        if frame is None:
            return
        writer.write(codec.encode(frame))
        await writer.drain()


@pytest_asyncio.fixture
async def echo_server():
    server = await wire.serve_tcp(line_echo_handler, name="line-echo")
    yield server
    await server.close()


@pytest_asyncio.fixture
async def frame_server():
    server = await wire.serve_tcp(frame_echo_handler, name="frame-echo")
    yield server
    await server.close()


@pytest_asyncio.fixture
async def rpc_handler():
    return RpcServerHandler(demo_methods())


@pytest_asyncio.fixture
async def rpc_server(rpc_handler):
    server = await wire.serve_tcp(rpc_handler, name="rpc")
    yield server
    await server.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_rpc():
    """One RPC server for a whole module, living on the module's event loop."""
    handler = RpcServerHandler(demo_methods())
    server = await wire.serve_tcp(handler, name="shared-rpc")
    server.shared = True
    yield server, handler
    await server.close()


@pytest_asyncio.fixture
async def open_streams():
    """Factory for client streams that are all closed at teardown."""
    writers = []

    async def _open(*args, **kwargs):
        reader, writer = await asyncio.open_connection(*args, **kwargs)
        writers.append(writer)
        return reader, writer

    yield _open
    for writer in writers:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError, ssl.SSLError):
            pass


def encode_json(obj) -> bytes:
    return json.dumps(obj).encode()
