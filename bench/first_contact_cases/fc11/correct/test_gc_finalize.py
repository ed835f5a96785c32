"""Memory hygiene of finished tasks and futures, as long-running servers depend
on it (a websocket server spawning a task per message, a request cache holding
futures): once a task or future is finished and the program drops it, nothing in
the event loop keeps it (or its result) alive.

Each object is created inside a helper coroutine that returns only a weak
reference, so no frame of the test holds a strong one.
"""
import asyncio
import gc
import weakref

import pytest

pytestmark = pytest.mark.asyncio


class Payload:
    """A result object big enough that leaking it would matter."""

    def __init__(self, n):
        self.blob = bytearray(n)


async def settle():
    # Let done callbacks scheduled by the finished objects run, then collect.
    for _ in range(3):
        await asyncio.sleep(0)
    gc.collect()


async def test_finished_task_is_collected_after_drop():
    finalized = []

    async def spawn():
        async def handler():
            await asyncio.sleep(0)
            return "handled"

        t = asyncio.create_task(handler())
        assert await t == "handled"
        weakref.finalize(t, finalized.append, "task")
        return weakref.ref(t)

    ref = await spawn()
    await settle()
    assert ref() is None
    assert finalized == ["task"]


async def test_task_result_released_with_task():
    async def spawn():
        async def build():
            await asyncio.sleep(0)
            return Payload(1 << 20)

        t = asyncio.create_task(build())
        result = await t
        return weakref.ref(t), weakref.ref(result)

    task_ref, result_ref = await spawn()
    await settle()
    assert task_ref() is None
    assert result_ref() is None


async def test_resolved_future_and_callbacks_are_collected():
    loop = asyncio.get_running_loop()
    seen = []

    async def spawn():
        fut = loop.create_future()
        fut.add_done_callback(lambda f: seen.append(f.result()))
        loop.call_soon(fut.set_result, "pong")
        assert await fut == "pong"
        return weakref.ref(fut)

    ref = await spawn()
    await settle()
    assert seen == ["pong"]
    assert ref() is None


async def test_cancelled_and_failed_tasks_are_collected():
    async def spawn():
        async def forever():
            await asyncio.Event().wait()

        async def fail():
            await asyncio.sleep(0)
            raise ValueError("bad frame")

        c = asyncio.create_task(forever())
        f = asyncio.create_task(fail())
        await asyncio.sleep(0)
        c.cancel()
        results = await asyncio.gather(c, f, return_exceptions=True)
        assert isinstance(results[0], asyncio.CancelledError)
        assert isinstance(results[1], ValueError)
        return weakref.ref(c), weakref.ref(f)

    refs = await spawn()
    await settle()
    assert [r() for r in refs] == [None, None]
