"""A truncation computed from a stale count: the count is taken, the task awaits, then it re-reads
the list and keeps that many entries; an entry added in between is dropped.

The task re-reads the list before it writes (the `if`), but the value it stores is built from
the count read before the await (a value, not a condition): a lost update."""

import asyncio
import random

import pytest


class Window:
    def __init__(self) -> None:
        self.entries: list = []

    async def _live(self) -> int:
        count = len(self.entries)
        await asyncio.sleep(0.001)  # the count is handed back by a worker
        return count

    async def trim(self) -> None:
        keep = await self._live()
        if self.entries:
            self.entries = self.entries[:keep]

    async def add(self, value: int) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        self.entries.append(value)


@pytest.mark.asyncio
async def test_trim_keeps_new_entries() -> None:
    window = Window()
    window.entries = [1, 2]
    await asyncio.gather(window.trim(), window.add(3))
    assert 3 in window.entries
