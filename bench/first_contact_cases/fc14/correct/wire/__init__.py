"""wire: a small asyncio networking toolkit (framing, RPC, pools, TLS, datagrams, websockets-like messages)."""

from .errors import (
    ConnectionClosed,
    FrameTooLarge,
    IncompleteFrame,
    PoolClosed,
    PoolTimeout,
    ProtocolError,
    RemoteError,
    WireError,
)
from .framing import LengthPrefixedCodec, LineCodec
from .server import Server, live_servers, serve_tcp, serve_unix

__all__ = [
    "ConnectionClosed",
    "FrameTooLarge",
    "IncompleteFrame",
    "LengthPrefixedCodec",
    "LineCodec",
    "PoolClosed",
    "PoolTimeout",
    "ProtocolError",
    "RemoteError",
    "Server",
    "WireError",
    "live_servers",
    "serve_tcp",
    "serve_unix",
]
