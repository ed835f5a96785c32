"""An order violation in which neither side ever awaited: a timer callback reads a flag that a
task sets in its very first step. There is no await to name, so the report must say what ran
instead of "the await at ?"."""

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
    flag.ready = True


def start(flag: Flag) -> None:
    asyncio.ensure_future(prepare(flag))


@pytest.mark.asyncio
async def test_callback_reads_after_prepare() -> None:
    loop = asyncio.get_running_loop()
    flag = Flag()
    seen: list = []
    loop.call_later(0.001, functools.partial(start, flag))
    await asyncio.sleep(random.uniform(0, 0.002))
    loop.call_later(0.0005, functools.partial(look, flag, seen))
    await asyncio.sleep(0.003)
    assert seen == [True]
