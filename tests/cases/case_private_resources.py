"""Input for tests/test_cannot_lie.py: a test that keeps to its own files and ports.

It writes under pytest's tmp_path and under tempfile's directories, and serves on a port the
kernel picks (port 0): two copies of it at once share nothing, so the engine may run its copies
side by side (the one-at-a-time rule is for tests like case_fixed_resources.py). Two tasks that
sleep give the exploration more than one schedule to run.
"""

import asyncio
import tempfile
from pathlib import Path

import pytest


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(await reader.readline())
    await writer.drain()
    writer.close()


@pytest.mark.asyncio
async def test_keeps_to_its_own_files_and_ports(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("one")
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "scratch").write_text("two")
    with tempfile.NamedTemporaryFile("w") as f:
        f.write("three")
    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"ping\n")
    assert await reader.readline() == b"ping\n"
    writer.close()
    server.close()
    await server.wait_closed()
    order = []

    async def after(delay: float, name: str) -> None:
        await asyncio.sleep(delay)
        order.append(name)

    await asyncio.gather(after(0.01, "a"), after(0.02, "b"))
    assert sorted(order) == ["a", "b"]
