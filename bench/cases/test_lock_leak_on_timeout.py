"""A leaked lock: acquire() without `async with`, and a timeout cancels the holder before it releases.

`save()` acquires the store's lock by hand and releases it at the end. When the disk write takes
longer than the caller's 2 ms timeout, wait_for cancels save() between acquire and release; the
lock stays held by a task that no longer exists, and the next save() waits for it forever.
(Every task is then blocked with nothing left to wake one: there is no lock cycle, the holder is
gone.)
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "deadlock"}


class Store:
    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.items: list = []

    async def save(self, item: str) -> None:
        await self.lock.acquire()
        await asyncio.sleep(random.uniform(0, 0.003))  # the disk write
        self.items.append(item)
        self.lock.release()


@pytest.mark.asyncio
async def test_save_after_timeout() -> None:
    store = Store()
    try:
        await asyncio.wait_for(store.save("draft"), timeout=0.002)
    except asyncio.TimeoutError:
        pass  # "a slow autosave is skipped; the next one goes through"
    await store.save("final")
    assert store.items[-1] == "final"
