"""Readiness callbacks on raw file descriptors, as libraries that integrate a
foreign fd do (pyinotify/watchdog-style pipes, pycares, libpq's socket in psycopg,
a self-pipe wake-up): ``add_reader``/``remove_reader`` on ``os.pipe`` ends and
``add_writer``/``remove_writer`` on a socketpair.
"""
import asyncio
import os
import socket

import pytest

pytestmark = pytest.mark.asyncio


class PipeLineReader:
    """Collects newline-terminated records from a non-blocking pipe fd."""

    def __init__(self, loop, fd):
        self.loop = loop
        self.fd = fd
        self.buf = b""
        self.lines = []
        self.eof = loop.create_future()
        self.wanted = None
        loop.add_reader(fd, self._on_readable)

    def _on_readable(self):
        data = os.read(self.fd, 4096)
        if not data:
            self.loop.remove_reader(self.fd)
            self.eof.set_result(len(self.lines))
            return
        self.buf += data
        *complete, self.buf = self.buf.split(b"\n")
        self.lines.extend(complete)
        if self.wanted and len(self.lines) >= self.wanted[0] and not self.wanted[1].done():
            self.wanted[1].set_result(list(self.lines))

    def wait_lines(self, n):
        fut = self.loop.create_future()
        self.wanted = (n, fut)
        if len(self.lines) >= n:
            fut.set_result(list(self.lines))
        return fut


def make_pipe():
    r, w = os.pipe()
    os.set_blocking(r, False)
    return r, w


async def test_pipe_reader_gets_records_in_order():
    loop = asyncio.get_running_loop()
    r, w = make_pipe()
    try:
        reader = PipeLineReader(loop, r)
        for chunk in (b"created a.txt\nmodi", b"fied b.txt\n", b"deleted c.txt\n"):
            os.write(w, chunk)
            await asyncio.sleep(0)
        lines = await asyncio.wait_for(reader.wait_lines(3), 20)
        assert lines == [b"created a.txt", b"modified b.txt", b"deleted c.txt"]
        assert loop.remove_reader(r) is True
        assert loop.remove_reader(r) is False
    finally:
        os.close(r)
        os.close(w)


async def test_eof_removes_reader():
    loop = asyncio.get_running_loop()
    r, w = make_pipe()
    try:
        reader = PipeLineReader(loop, r)
        os.write(w, b"one\ntwo\n")
        os.close(w)
        w = None
        assert await asyncio.wait_for(reader.eof, 20) == 2
        assert loop.remove_reader(r) is False
    finally:
        os.close(r)
        if w is not None:
            os.close(w)


async def test_second_add_reader_replaces_first():
    loop = asyncio.get_running_loop()
    r, w = make_pipe()
    calls = {"old": 0, "new": 0}
    got = loop.create_future()

    def old():
        calls["old"] += 1

    def new():
        calls["new"] += 1
        data = os.read(r, 100)
        if not got.done():
            got.set_result(data)

    try:
        loop.add_reader(r, old)
        loop.add_reader(r, new)
        os.write(w, b"ping")
        assert await asyncio.wait_for(got, 20) == b"ping"
        assert calls["old"] == 0
    finally:
        loop.remove_reader(r)
        os.close(r)
        os.close(w)


async def test_add_writer_fires_when_buffer_drains():
    loop = asyncio.get_running_loop()
    a, b = socket.socketpair()
    with a, b:
        a.setblocking(False)
        b.setblocking(False)
        sent = 0
        while True:
            try:
                sent += a.send(b"x" * 65536)
            except BlockingIOError:
                break
        writable = loop.create_future()
        loop.add_writer(a, lambda: writable.done() or writable.set_result(True))
        await asyncio.sleep(0.05)
        assert not writable.done()  # nobody has read anything yet
        received = 0
        while not writable.done():
            try:
                received += len(b.recv(65536))
            except BlockingIOError:
                await asyncio.sleep(0.01)
                continue
            await asyncio.sleep(0)
        assert await writable is True
        assert loop.remove_writer(a) is True
        assert loop.remove_writer(a) is False
        assert 0 < received <= sent


async def test_wakeup_pipe_from_callbacks():
    loop = asyncio.get_running_loop()
    r, w = make_pipe()
    woken = []
    done = asyncio.Event()

    def on_wake():
        woken.extend(os.read(r, 100))
        if len(woken) >= 3:
            done.set()

    try:
        loop.add_reader(r, on_wake)
        for byte in (b"\x01", b"\x02", b"\x03"):
            loop.call_soon(os.write, w, byte)
        await asyncio.wait_for(done.wait(), 20)
        assert woken == [1, 2, 3]
    finally:
        loop.remove_reader(r)
        os.close(r)
        os.close(w)
