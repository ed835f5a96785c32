"""contextvars: copied into tasks, threads and callbacks; isolated between tasks."""
import asyncio
import contextvars

import pytest

request_id = contextvars.ContextVar("request_id", default="unset")


@pytest.mark.asyncio
async def test_task_sees_value_at_creation_time():
    request_id.set("outer")

    async def child():
        await asyncio.sleep(0.01)
        return request_id.get()

    t = asyncio.create_task(child())
    request_id.set("changed-after-spawn")
    assert await t == "outer"
    assert request_id.get() == "changed-after-spawn"


@pytest.mark.asyncio
async def test_child_mutation_does_not_leak_to_parent():
    request_id.set("parent")

    async def child(i):
        request_id.set(f"child-{i}")
        await asyncio.sleep(0.005 * (3 - i))
        return request_id.get()

    results = await asyncio.gather(*(child(i) for i in range(3)))
    assert results == ["child-0", "child-1", "child-2"]
    assert request_id.get() == "parent"


@pytest.mark.asyncio
async def test_to_thread_copies_context():
    request_id.set("for-thread")
    assert await asyncio.to_thread(request_id.get) == "for-thread"


@pytest.mark.asyncio
async def test_call_soon_with_explicit_context():
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    ctx.run(request_id.set, "in-ctx")
    fut = loop.create_future()
    loop.call_soon(lambda: fut.set_result(request_id.get()), context=ctx)
    assert await fut == "in-ctx"
    assert request_id.get() != "in-ctx"


@pytest.mark.asyncio
async def test_task_with_explicit_context_argument():
    ctx = contextvars.Context()

    async def read():
        await asyncio.sleep(0)
        return request_id.get()

    request_id.set("ambient")
    assert await asyncio.create_task(read(), context=ctx) == "unset"
