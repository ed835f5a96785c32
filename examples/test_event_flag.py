"""An event set after the reader checked it: the sender looks at the flag instead of waiting."""

import asyncio
import random

import pytest


class Connection:
    def __init__(self) -> None:
        self.connected = asyncio.Event()
        self.sent: list = []

    async def open(self) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))  # the handshake
        self.connected.set()

    async def send(self, message: str) -> None:
        await asyncio.sleep(0.001)  # the message is prepared meanwhile
        if not self.connected.is_set():
            raise ConnectionError("not connected")
        self.sent.append(message)


@pytest.mark.asyncio
async def test_send_after_open() -> None:
    conn = Connection()
    await asyncio.gather(conn.open(), conn.send("hello"))
    assert conn.sent == ["hello"]
