"""Background tasks a library spawns and the test does not hold.

`Archive.submit()` acknowledges at once and stores the item in a task it keeps in a set; the
test runs it in a task of its own (gather), waits a moment of random length and checks what was
stored. `Archive.fire()` spawns the same
task and drops its handle.
"""

import asyncio
import random

import pytest


class Archive:
    def __init__(self) -> None:
        self.stored: list = []
        self._pending: set = set()

    async def _store(self, item: str) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))  # the write to disk
        self.stored.append(item)

    async def submit(self, item: str) -> str:
        await asyncio.sleep(random.uniform(0, 0.0005))  # the request arrives
        task = asyncio.create_task(self._store(item))
        self._pending.add(task)
        return item

    async def fire(self, item: str) -> str:
        await asyncio.sleep(random.uniform(0, 0.0005))
        asyncio.create_task(self._store(item))
        return item


@pytest.mark.asyncio
async def test_submitted_items_are_stored() -> None:
    archive = Archive()
    names = await asyncio.gather(archive.submit("a"))  # the request runs in a task of its own
    await asyncio.sleep(random.uniform(0, 0.003))  # "the write is quick"
    assert archive.stored == names


@pytest.mark.asyncio
async def test_fired_item_is_stored() -> None:
    archive = Archive()
    await archive.fire("a")
    await asyncio.sleep(random.uniform(0, 0.003))
    assert archive.stored == ["a"]
