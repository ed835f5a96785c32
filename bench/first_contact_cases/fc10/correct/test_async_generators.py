"""Async generator tests in the style of a paginated API client / DB cursor
(aiobotocore paginators, asyncpg cursors, Motor): full iteration, explicit
aclose(), ``contextlib.aclosing`` with an early break, athrow()/asend(), and a
consumer cancelled while the generator is awaiting.
"""
import asyncio
import contextlib

import pytest


class FakeApi:
    def __init__(self, pages):
        self.pages = pages
        self.open_cursors = 0
        self.log = []

    async def paginate(self):
        self.open_cursors += 1
        self.log.append("open")
        try:
            for n, page in enumerate(self.pages):
                await asyncio.sleep(0.001)          # network round trip
                for item in page:
                    yield item
                self.log.append(f"page{n}")
        finally:
            await asyncio.sleep(0)                  # async "close cursor"
            self.open_cursors -= 1
            self.log.append("closed")


@pytest.mark.asyncio
async def test_full_iteration_closes_the_cursor():
    api = FakeApi([[1, 2], [3], [4, 5]])
    items = [x async for x in api.paginate()]
    assert items == [1, 2, 3, 4, 5]
    assert api.open_cursors == 0
    assert api.log == ["open", "page0", "page1", "page2", "closed"]


@pytest.mark.asyncio
async def test_explicit_aclose_runs_finally_and_ends_iteration():
    api = FakeApi([[1, 2], [3]])
    gen = api.paginate()
    assert await anext(gen) == 1
    assert api.open_cursors == 1
    await gen.aclose()
    assert api.open_cursors == 0 and api.log[-1] == "closed"
    with pytest.raises(StopAsyncIteration):
        await anext(gen)


@pytest.mark.asyncio
async def test_aclosing_finalizes_before_the_with_block_ends():
    api = FakeApi([[1, 2, 3], [4]])
    async with contextlib.aclosing(api.paginate()) as gen:
        async for item in gen:
            if item == 2:
                break
    # finalized here, in this task, not later by the loop's asyncgen hook
    assert api.open_cursors == 0
    assert api.log == ["open", "closed"]


@pytest.mark.asyncio
async def test_athrow_and_asend_protocol():
    async def accumulator():
        total = 0
        while True:
            try:
                value = yield total
            except ValueError:
                total = 0                       # "reset" command
                continue
            await asyncio.sleep(0)
            total += value

    acc = accumulator()
    assert await acc.asend(None) == 0
    assert await acc.asend(5) == 5
    assert await acc.asend(7) == 12
    assert await acc.athrow(ValueError) == 0
    assert await acc.asend(1) == 1
    await acc.aclose()
    with pytest.raises(StopAsyncIteration):
        await acc.asend(1)


@pytest.mark.asyncio
async def test_cancelling_consumer_runs_generator_cleanup_in_that_task():
    waiting = asyncio.Event()
    cleanup_task = []

    async def stream():
        try:
            yield "hello"
            waiting.set()
            await asyncio.Event().wait()        # waits for data forever
            yield "never"
        finally:
            cleanup_task.append(asyncio.current_task())

    async def consumer():
        got = []
        async for msg in stream():
            got.append(msg)
        return got

    task = asyncio.create_task(consumer())
    await asyncio.wait_for(waiting.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleanup_task == [task]
