"""gather() teardown: each upload returns before its background commit has written, and the test checks.

`upload()` acknowledges at once and leaves the commit to a task it does not await; the test
gathers the uploads, waits 2 ms "for the commits", and checks what was committed. A commit that
is still writing then is missing from the result.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "order_violation", "resource": "Uploader#0.committed"}


class Uploader:
    def __init__(self) -> None:
        self.committed: list = []
        self.background: set = set()

    async def _commit(self, name: str) -> None:
        await asyncio.sleep(random.uniform(0, 0.0025))  # fsync of the object
        self.committed.append(name)

    async def upload(self, name: str) -> str:
        await asyncio.sleep(random.uniform(0, 0.001))  # the bytes go over the wire
        task = asyncio.create_task(self._commit(name))  # "acknowledge early, commit in the background"
        self.background.add(task)
        return name


@pytest.mark.asyncio
async def test_everything_is_committed() -> None:
    uploader = Uploader()
    names = await asyncio.gather(uploader.upload("a"), uploader.upload("b"), uploader.upload("c"))
    await asyncio.sleep(0.002)  # "commits are quick"
    committed = sorted(uploader.committed)
    await asyncio.gather(*uploader.background)
    assert committed == names
