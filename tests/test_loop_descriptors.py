"""An idle controlled loop with real descriptors registered: when it may jump its clock (quiet.c).

A loop waits in real time while something outside its schedule may write to a registered
descriptor. When every writer is this process and nothing is on its way -- a server and its client
over loopback, asyncio's self-pipe -- it jumps to its next timer as with no descriptor, so a test
that sleeps between two requests does not sleep for real in each of its runs. A descriptor another
process can write to (a child's end, a pipe, a datagram socket) keeps the real wait. Each test
asserts on the run's idle jumps (EV_IDLE events; the old loop recorded none in any of these runs)
and flags (TRACE_REAL_WAIT: the loop blocked on real time).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from typing import Tuple

import pytest

from affidavit import _runtime
from test_loop import run_controlled

pytestmark = pytest.mark.one_thread


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while line := await reader.readline():
        writer.write(line.upper())
        await writer.drain()
    writer.close()


async def two_requests_a_long_sleep_apart() -> Tuple[bytes, bytes, float]:
    """A loopback server and client, both on this loop; the connection stays open across the sleep
    (the server's reply was ACKed late or not yet: a delayed ACK must not count as data on its way)."""
    loop = asyncio.get_running_loop()
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"one\n")
        first = await reader.readline()
        t0 = loop.time()
        await asyncio.sleep(30)
        slept = loop.time() - t0
        writer.write(b"two\n")
        second = await reader.readline()
        return first, second, slept
    finally:
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()


def jumps() -> int:
    """The run's idle jumps: the loop went idle with a timer pending and moved its clock to it (a
    real wait records none)."""
    return sum(1 for e in _runtime.events() if e[0] == _runtime.EV_IDLE)


def test_a_loopback_server_and_client_let_an_idle_loop_jump() -> None:
    assert run_controlled(two_requests_a_long_sleep_apart, "")[:2] == (b"ONE\n", b"TWO\n")
    assert jumps() >= 1, "the loop waited 30 s in real time with no writer outside"
    assert _runtime.trace_info()["flags"] & _runtime.TRACE_REAL_IO, "the run used real descriptors and must say so"


def test_the_jump_keeps_the_slept_time_and_the_order_of_replies() -> None:
    first, second, slept = run_controlled(two_requests_a_long_sleep_apart, "")
    assert (first, second) == (b"ONE\n", b"TWO\n")
    assert 30 <= slept < 30.01


async def a_child_writes_while_the_loop_sleeps() -> bytes:
    """The child writes its end of a socket pair after 0.2 s; the coroutine waits at most 5 s (a
    timer is pending). Made in this process, the pair's peer credentials are this process's: only
    the child rule keeps the loop waiting for real, as stock asyncio does."""
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    child = subprocess.Popen([sys.executable, "-c",
                              f"import os, time; time.sleep(0.2); os.write({theirs.fileno()}, b'hi')"],
                             pass_fds=[theirs.fileno()])
    theirs.close()
    got: "asyncio.Future[bytes]" = loop.create_future()
    loop.add_reader(ours.fileno(), lambda: got.done() or got.set_result(ours.recv(10)))
    try:
        return await asyncio.wait_for(got, 5)
    finally:
        loop.remove_reader(ours.fileno())
        ours.close()
        child.wait()


def test_a_child_that_writes_keeps_the_wait_real() -> None:
    assert run_controlled(a_child_writes_while_the_loop_sleeps, "") == b"hi"
    assert _runtime.trace_info()["flags"] & _runtime.TRACE_REAL_WAIT and jumps() == 0


async def a_datagram_socket_waits() -> bool:
    """A UDP socket: a datagram on its way cannot be seen, so the wait stays real."""
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, local_addr=("127.0.0.1", 0))
    try:
        await asyncio.sleep(0.05)
        return True
    finally:
        transport.close()


def test_a_datagram_socket_keeps_the_wait_real() -> None:
    assert run_controlled(a_datagram_socket_waits, "")
    assert _runtime.trace_info()["flags"] & _runtime.TRACE_REAL_WAIT and jumps() == 0


async def a_pipe_waits() -> bool:
    r, w = os.pipe()
    loop = asyncio.get_running_loop()
    loop.add_reader(r, lambda: None)
    try:
        await asyncio.sleep(0.05)
        return True
    finally:
        loop.remove_reader(r)
        os.close(r)
        os.close(w)


def test_a_pipe_keeps_the_wait_real() -> None:
    assert run_controlled(a_pipe_waits, "")
    assert _runtime.trace_info()["flags"] & _runtime.TRACE_REAL_WAIT and jumps() == 0
