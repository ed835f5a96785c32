"""anyio tests on the asyncio backend, in the style of libraries built on anyio
(httpx/httpcore, Starlette): CancelScope cancelled from another task,
move_on_after / fail_after, memory object streams, to_thread.run_sync,
anyio.Event, and task groups with start().
"""
import threading

import anyio
import pytest

pytestmark = pytest.mark.anyio

EPS = 0.01


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_cancel_scope_cancelled_from_another_task():
    entered = anyio.Event()
    state = {}

    async def long_poll(scope_holder):
        with anyio.CancelScope() as scope:
            scope_holder.append(scope)
            entered.set()
            await anyio.sleep_forever()
        state["caught"] = scope.cancelled_caught

    holder = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(long_poll, holder)
        with anyio.fail_after(10):
            await entered.wait()
        holder[0].cancel()
    assert state == {"caught": True}
    assert holder[0].cancel_called


async def test_move_on_after_abandons_a_hung_call():
    t0 = anyio.current_time()
    with anyio.move_on_after(0.2) as scope:
        await anyio.sleep(3600)
    elapsed = anyio.current_time() - t0
    assert scope.cancelled_caught
    assert 0.2 - EPS <= elapsed < 10
    with anyio.fail_after(10) as quick:
        await anyio.sleep(0.01)
    assert not quick.cancelled_caught


async def test_memory_stream_single_producer_order_and_close():
    send, receive = anyio.create_memory_object_stream[int](max_buffer_size=2)
    got = []

    async def producer():
        async with send:
            for i in range(10):
                await send.send(i)

    async def consumer():
        async with receive:
            async for item in receive:
                got.append(item)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consumer)
            tg.start_soon(producer)
    assert got == list(range(10))


async def test_to_thread_runs_blocking_code_off_the_loop():
    loop_thread = threading.current_thread()

    def blocking(x):
        return x * 3, threading.current_thread()

    value, thread = await anyio.to_thread.run_sync(blocking, 14)
    assert value == 42 and thread is not loop_thread
    limiter = anyio.CapacityLimiter(1)
    results = []
    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(lambda i=i: _record(results, i, limiter))
    assert sorted(results) == [0, 3, 6]


async def _record(results, i, limiter):
    results.append(await anyio.to_thread.run_sync(lambda: i * 3, limiter=limiter))


async def test_event_wakes_every_waiter():
    ev = anyio.Event()
    woke = []

    async def waiter(i):
        await ev.wait()
        woke.append(i)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(waiter, i)
            await anyio.sleep(0.02)
            assert woke == []
            ev.set()
    assert sorted(woke) == [0, 1, 2, 3]


async def test_task_group_start_waits_for_readiness_and_errors_group():
    async def server(*, task_status=anyio.TASK_STATUS_IGNORED):
        await anyio.sleep(0.01)
        task_status.started(8080)
        await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        port = await tg.start(server)
        assert port == 8080
        tg.cancel_scope.cancel()

    async def boom():
        await anyio.sleep(0)
        raise KeyError("bad shard")

    with pytest.raises(ExceptionGroup) as excinfo:
        async with anyio.create_task_group() as tg:
            tg.start_soon(boom)
            tg.start_soon(anyio.sleep_forever)
    assert excinfo.group_contains(KeyError)
