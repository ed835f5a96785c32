"""Input for tests/test_cannot_lie.py: tests that hold a fixed, process-wide resource for a moment.

One binds a fixed TCP port on 127.0.0.1, the other creates a fixed file next to this one
(exclusive create); each holds it across a sleep, then lets it go. pytest runs one test at a time,
so plain pytest passes them every time; two copies of one test running at once would collide,
which is why a tool must never run copies of one test side by side.

Each test is parametrized by a slot, so that the callers in tests/test_cannot_lie.py (which run in
parallel under pytest-xdist) each use a port and a file of their own.
"""

import asyncio
import errno
import os
import socket
import zlib
from pathlib import Path

import pytest

SLOTS = ["plain", "sample", "explore", "plugin", "replay", "copies"]

# Below Linux's ephemeral range (32768-60999), derived from a constant so that nothing else here
# picks it: 20000 + a hash of the name, one port per slot.
BASE_PORT = 20000 + zlib.crc32(b"affidavit/tests/cases/case_fixed_resources.py") % 10000


def port_of(slot: str) -> int:
    return BASE_PORT + SLOTS.index(slot)


def path_of(slot: str) -> Path:
    return Path(__file__).with_name(f".case_fixed_resources.{slot}.lock")


@pytest.mark.parametrize("slot", SLOTS)
@pytest.mark.asyncio
async def test_fixed_port_held_across_a_sleep(slot: str) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        try:
            sock.bind(("127.0.0.1", port_of(slot)))
        except OSError as exc:
            assert exc.errno != errno.EADDRINUSE, f"port {port_of(slot)} is already bound"
            raise
        sock.listen(1)
        await asyncio.sleep(0.05)
    finally:
        sock.close()


@pytest.mark.parametrize("slot", SLOTS)
@pytest.mark.asyncio
async def test_fixed_file_created_exclusively_across_a_sleep(slot: str) -> None:
    path = path_of(slot)
    with open(path, "x") as f:  # FileExistsError if another copy holds it
        f.write(str(os.getpid()))
    try:
        await asyncio.sleep(0.05)
        assert path.read_text() == str(os.getpid()), "another process wrote this test's file"
    finally:
        path.unlink()
