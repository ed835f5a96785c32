"""Lost updates whose tasks and callbacks are made the ways real code makes them: from
functools.partial, from bound methods, through a class-based caching wrapper (the shape of
async-lru's alru_cache), and as loop.call_later(partial(...)) callbacks of a function and of a
bound method. Every label in a report must name the function written here, never
functools.partial or the wrapper's __call__."""

import asyncio
import functools

import pytest


class Cache:
    def __init__(self) -> None:
        self.hits = 0

    async def get(self, key: str) -> str:
        seen = self.hits
        await asyncio.sleep(0.001)  # the backend answers after a while
        self.hits = seen + 1
        return key


class _Wrapper:
    """A coroutine-function wrapper that is an object, as alru_cache's is: the coroutine a call
    makes runs this __call__, not the wrapped function."""

    def __init__(self, fn):  # type: ignore[no-untyped-def]
        self.__wrapped__ = fn
        functools.update_wrapper(self, fn)

    async def __call__(self, *args):  # type: ignore[no-untyped-def]
        return await self.__wrapped__(*args)


def cached(fn):  # type: ignore[no-untyped-def]
    return _Wrapper(fn)


COUNTS = {"n": 0}


@cached
async def fetch_count(step: int) -> None:
    seen = COUNTS["n"]
    await asyncio.sleep(0.001)
    COUNTS["n"] = seen + step


@pytest.mark.asyncio
async def test_partial_and_bound_method_tasks() -> None:
    cache = Cache()
    get = functools.partial(cache.get, "k")
    await asyncio.gather(asyncio.ensure_future(get()), asyncio.ensure_future(functools.partial(Cache.get, cache)("j")))
    assert cache.hits == 2


@pytest.mark.asyncio
async def test_wrapped_coroutine_tasks() -> None:
    COUNTS["n"] = 0
    await asyncio.gather(fetch_count(1), fetch_count(2))
    assert COUNTS["n"] == 3


class Meter:
    def __init__(self) -> None:
        self.total = 0

    def add(self, n: int) -> None:
        self.total += n


def bump(meter: Meter, n: int) -> None:
    meter.total += n


async def slow_add(meter: Meter, n: int) -> None:
    seen = meter.total
    await asyncio.sleep(0.002)  # the write lands after the timers fired
    meter.total = seen + n


@pytest.mark.asyncio
async def test_partial_callbacks() -> None:
    loop = asyncio.get_running_loop()
    meter = Meter()
    task = asyncio.ensure_future(slow_add(meter, 1))
    loop.call_later(0.001, functools.partial(bump, meter, 10))
    loop.call_later(0.001, functools.partial(meter.add, 100))
    await task
    assert meter.total == 111
