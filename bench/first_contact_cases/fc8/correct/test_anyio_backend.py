"""Tests written against anyio's pytest plugin (``@pytest.mark.anyio`` with an
``anyio_backend`` fixture pinned to asyncio), as done by httpx / starlette style
libraries that support several async backends.

Covers task groups measured with ``anyio.current_time()``, ``move_on_after`` and
a generous ``fail_after``, memory object streams as a producer/consumer
channel, ``CapacityLimiter`` and cancelling a background worker through the
task group's cancel scope.
"""


import anyio
import pytest


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_task_group_runs_children_concurrently():
    results = {}

    async def fetch(name, delay):
        await anyio.sleep(delay)
        results[name] = delay

    start = anyio.current_time()
    async with anyio.create_task_group() as tg:
        for i in range(5):
            tg.start_soon(fetch, f"job{i}", 0.05)
    elapsed = anyio.current_time() - start
    assert sorted(results) == [f"job{i}" for i in range(5)]
    assert elapsed >= 0.05
    assert elapsed < 20 * 0.25


@pytest.mark.anyio
async def test_move_on_after_cancels_only_the_scope():
    reached = []
    with anyio.move_on_after(0.05) as scope:
        await anyio.sleep(60)
        reached.append("never")
    assert scope.cancelled_caught
    assert reached == []
    await anyio.sleep(0)  # still usable afterwards


@pytest.mark.anyio
async def test_memory_stream_channel_delivers_everything():
    send, receive = anyio.create_memory_object_stream[int](max_buffer_size=3)
    received = []

    async def producer():
        async with send:
            for i in range(20):
                await send.send(i)

    async def consumer():
        async with receive:
            async for item in receive:
                received.append(item)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(producer)
            tg.start_soon(consumer)
    assert received == list(range(20))


@pytest.mark.anyio
async def test_capacity_limiter_bounds_parallelism():
    limiter = anyio.CapacityLimiter(2)
    active = 0
    peak = 0

    async def job():
        nonlocal active, peak
        async with limiter:
            active += 1
            peak = max(peak, active)
            await anyio.sleep(0.01)
            active -= 1

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(job)
    assert peak == 2
    assert active == 0


@pytest.mark.anyio
async def test_cancel_scope_cancels_background_worker():
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(30)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    assert ticks == 1
