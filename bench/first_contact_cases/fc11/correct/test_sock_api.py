"""A tiny RPC transport written directly on the loop's ``sock_*`` methods, as
drivers that manage their own sockets do (asyncpg's connect path, aiodns/pycares,
zeroconf): non-blocking sockets, ``sock_accept``/``sock_connect``, and
``sock_sendall``/``sock_recv``/``sock_recv_into`` over TCP and socketpairs.
"""
import asyncio
import hashlib
import socket

import pytest

pytestmark = pytest.mark.asyncio


def nonblocking(sock):
    sock.setblocking(False)
    return sock


async def recv_exactly(loop, sock, n):
    chunks = []
    while n:
        data = await loop.sock_recv(sock, min(n, 65536))
        if not data:
            raise EOFError(f"peer closed with {n} bytes missing")
        chunks.append(data)
        n -= len(data)
    return b"".join(chunks)


async def serve_once(loop, lsock):
    conn, _ = await loop.sock_accept(lsock)
    conn.setblocking(False)
    with conn:
        header = await recv_exactly(loop, conn, 4)
        body = await recv_exactly(loop, conn, int.from_bytes(header, "big"))
        reply = body[::-1]
        await loop.sock_sendall(conn, len(reply).to_bytes(4, "big") + reply)


async def test_tcp_accept_connect_roundtrip():
    loop = asyncio.get_running_loop()
    with nonblocking(socket.socket()) as lsock:
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(1)
        server = asyncio.create_task(serve_once(loop, lsock))
        with nonblocking(socket.socket()) as csock:
            await asyncio.wait_for(loop.sock_connect(csock, lsock.getsockname()), 20)
            msg = b"hello over raw sockets"
            await loop.sock_sendall(csock, len(msg).to_bytes(4, "big") + msg)
            n = int.from_bytes(await recv_exactly(loop, csock, 4), "big")
            assert await recv_exactly(loop, csock, n) == msg[::-1]
        await asyncio.wait_for(server, 20)


async def test_socketpair_large_sendall_with_concurrent_reader():
    loop = asyncio.get_running_loop()
    a, b = socket.socketpair()
    with a, b:
        a.setblocking(False)
        b.setblocking(False)
        payload = bytes(range(256)) * 4096  # 1 MiB, far above the socket buffer

        async def reader():
            return await recv_exactly(loop, b, len(payload))

        rtask = asyncio.create_task(reader())
        await asyncio.wait_for(loop.sock_sendall(a, payload), 20)
        got = await asyncio.wait_for(rtask, 20)
        assert hashlib.sha256(got).digest() == hashlib.sha256(payload).digest()


async def test_recv_into_buffer():
    loop = asyncio.get_running_loop()
    a, b = socket.socketpair()
    with a, b:
        a.setblocking(False)
        b.setblocking(False)
        buf = bytearray(64)
        pending = asyncio.create_task(loop.sock_recv_into(b, buf))
        await loop.sock_sendall(a, b"metrics:42")
        n = await asyncio.wait_for(pending, 20)
        assert 1 <= n <= 10
        rest = b"metrics:42"[n:]
        assert bytes(buf[:n]) + (await recv_exactly(loop, b, len(rest)) if rest else b"") == b"metrics:42"


async def test_eof_after_peer_shutdown():
    loop = asyncio.get_running_loop()
    a, b = socket.socketpair()
    with a, b:
        a.setblocking(False)
        b.setblocking(False)
        await loop.sock_sendall(a, b"last words")
        a.shutdown(socket.SHUT_WR)
        assert await recv_exactly(loop, b, 10) == b"last words"
        assert await asyncio.wait_for(loop.sock_recv(b, 100), 20) == b""
        with pytest.raises(EOFError):
            await recv_exactly(loop, b, 1)


async def test_cancelled_recv_then_retry_receives_data():
    # Regression guard for bpo-30064: a cancelled sock_recv must not steal or
    # unregister the reader of the next sock_recv on the same socket.
    loop = asyncio.get_running_loop()
    a, b = socket.socketpair()
    with a, b:
        a.setblocking(False)
        b.setblocking(False)
        first = asyncio.create_task(loop.sock_recv(b, 100))
        await asyncio.sleep(0)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        retry = asyncio.create_task(loop.sock_recv(b, 100))
        await asyncio.sleep(0)
        await loop.sock_sendall(a, b"after cancel")
        assert await asyncio.wait_for(retry, 20) == b"after cancel"
