"""An order violation whose early side is a timer callback: it never awaited anything, so there
is no await to name; the report must say what ran instead of "the await at ?"."""

import asyncio
import functools
import random

import pytest


class Flag:
    def __init__(self) -> None:
        self.ready = False


def look(flag: Flag, seen: list) -> None:
    seen.append(flag.ready)


async def prepare(flag: Flag) -> None:
    await asyncio.sleep(random.uniform(0, 0.002))
    flag.ready = True


@pytest.mark.asyncio
async def test_callback_reads_after_prepare() -> None:
    loop = asyncio.get_running_loop()
    flag = Flag()
    seen: list = []
    task = asyncio.ensure_future(prepare(flag))
    loop.call_later(0.001, functools.partial(look, flag, seen))
    await asyncio.sleep(0.003)
    await task
    assert seen == [True]
