"""A lazy init guarded by a flag: two first uses both find the flag unset, both build, both set it.

Both tasks store the same literal (`self._ready = True`), so no value is lost by the overwrite:
the bug is that the stale check let the second task build again (a check-then-act)."""

import asyncio
import random

import pytest


class Index:
    def __init__(self) -> None:
        self._ready = False
        self.builds = 0

    async def _build(self) -> None:
        self.builds += 1
        await asyncio.sleep(0.001)  # the index build

    async def ensure(self) -> None:
        if self._ready:
            return
        await self._build()
        self._ready = True


async def use(index: Index) -> None:
    await asyncio.sleep(random.uniform(0, 0.002))
    await index.ensure()


@pytest.mark.asyncio
async def test_index_is_built_once() -> None:
    index = Index()
    await asyncio.gather(use(index), use(index))
    assert index.builds == 1
