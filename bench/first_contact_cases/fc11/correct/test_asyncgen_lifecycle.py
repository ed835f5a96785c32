"""Async generators as streaming APIs use them (a metrics aggregator driven with
``asend``/``athrow``, a cursor abandoned mid-iteration), and the loop's asyncgen
hooks: finalization of dropped generators and ``loop.shutdown_asyncgens()``.
"""
import asyncio
import gc
import sys

import pytest


async def running_mean():
    total = count = 0
    mean = None
    try:
        while True:
            try:
                value = yield mean
            except OverflowError:
                total = count = 0
                mean = None
                continue
            total += value
            count += 1
            mean = total / count
    finally:
        pass


async def cursor(rows, closed):
    try:
        for r in rows:
            await asyncio.sleep(0)
            yield r
    finally:
        closed.append("cursor closed")
        if isinstance(closed, Tracked):
            closed.event.set()


class Tracked(list):
    def __init__(self):
        super().__init__()
        self.event = asyncio.Event()


@pytest.mark.asyncio
async def test_asend_and_athrow():
    agg = running_mean()
    assert await agg.asend(None) is None
    assert await agg.asend(10) == 10
    assert await agg.asend(20) == 15
    assert await agg.athrow(OverflowError) is None
    assert await agg.asend(4) == 4
    await agg.aclose()
    with pytest.raises(StopAsyncIteration):
        await agg.asend(1)


@pytest.mark.asyncio
async def test_loop_installs_asyncgen_hooks():
    hooks = sys.get_asyncgen_hooks()
    assert hooks.firstiter is not None
    assert hooks.finalizer is not None


@pytest.mark.asyncio
async def test_dropped_generator_is_finalized_by_the_loop():
    closed = Tracked()

    async def read_first():
        gen = cursor([1, 2, 3], closed)
        return await gen.__anext__()

    assert await read_first() == 1
    gc.collect()
    # The finalizer hook schedules aclose() as a task on the loop.
    await asyncio.wait_for(closed.event.wait(), 20)
    assert closed == ["cursor closed"]


def test_shutdown_asyncgens_closes_suspended_generator():
    closed = []
    outer_hooks = sys.get_asyncgen_hooks()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        gen = cursor(["a", "b"], closed)

        async def first_row():
            # The firstiter hook runs at the first __anext__() call, which must
            # happen while the loop is running for the loop to track the generator.
            return await gen.__anext__()

        assert loop.run_until_complete(first_row()) == "a"
        assert closed == []
        loop.run_until_complete(loop.shutdown_asyncgens())
        assert closed == ["cursor closed"]

        async def next_row():
            return await gen.__anext__()

        with pytest.raises(StopAsyncIteration):
            loop.run_until_complete(next_row())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert sys.get_asyncgen_hooks() == outer_hooks
