"""Task introspection as debugging and monitoring tools use it (aiomonitor's
``ps``/``where`` commands, aiodebug, a graceful-shutdown helper that lists what is
still running): names, ``get_coro``, ``get_stack``/``print_stack``,
``current_task``, ``all_tasks``, and contexts for callbacks.
"""
import asyncio
import contextvars
import io

import pytest

pytestmark = pytest.mark.asyncio

request_id = contextvars.ContextVar("request_id", default="-")


async def handle_request(gate):
    await gate.wait()
    return "served"


async def test_names_and_coro():
    gate = asyncio.Event()
    t = asyncio.create_task(handle_request(gate))
    assert t.get_name().startswith("Task-")
    t.set_name("GET /health")
    assert t.get_name() == "GET /health"
    assert "GET /health" in repr(t)
    coro = t.get_coro()
    assert coro.cr_code.co_name == "handle_request"
    gate.set()
    assert await t == "served"
    assert t.get_coro() is coro


async def test_current_task_in_tasks_and_callbacks():
    me = asyncio.current_task()
    assert me is not None
    seen = {}

    async def child():
        seen["child"] = asyncio.current_task()

    c = asyncio.create_task(child())
    await c
    assert seen["child"] is c

    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    loop.call_soon(lambda: fut.set_result(asyncio.current_task()))
    assert await fut is None
    assert asyncio.current_task() is me


async def test_all_tasks_lists_pending_ones_only():
    gate = asyncio.Event()
    mine = [asyncio.create_task(handle_request(gate), name=f"req-{i}") for i in range(3)]
    names = {t.get_name() for t in asyncio.all_tasks()}
    assert {"req-0", "req-1", "req-2"} <= names
    assert asyncio.current_task() in asyncio.all_tasks()
    gate.set()
    await asyncio.gather(*mine)
    names = {t.get_name() for t in asyncio.all_tasks()}
    assert not names & {"req-0", "req-1", "req-2"}


async def test_stack_of_a_suspended_task():
    gate = asyncio.Event()
    entered = asyncio.Event()

    async def stuck_in_db_call():
        entered.set()
        await gate.wait()

    t = asyncio.create_task(stuck_in_db_call(), name="slow-query")
    await asyncio.wait_for(entered.wait(), 20)
    frames = t.get_stack()
    assert frames and frames[0].f_code.co_name == "stuck_in_db_call"
    out = io.StringIO()
    t.print_stack(file=out)
    text = out.getvalue()
    assert "stuck_in_db_call" in text
    assert "slow-query" in text
    gate.set()
    await t
    assert t.get_stack() == []


async def test_done_callback_and_call_soon_contexts():
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    ctx.run(request_id.set, "req-42")
    seen = []
    fut = loop.create_future()
    fut.add_done_callback(lambda f: seen.append(("done-ctx", request_id.get())), context=ctx)
    fut.add_done_callback(lambda f: seen.append(("done-default", request_id.get())))
    loop.call_soon(lambda: seen.append(("soon-ctx", request_id.get())), context=ctx)
    fut.set_result(None)
    marker = loop.create_future()
    loop.call_soon(marker.set_result, None)
    await marker
    assert seen == [("soon-ctx", "req-42"), ("done-ctx", "req-42"), ("done-default", "-")]
    assert ctx.run(request_id.get) == "req-42"
    assert request_id.get() == "-"


async def test_remove_done_callback_counts():
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    calls = []

    def cb(f):
        calls.append(f.result())

    fut.add_done_callback(cb)
    fut.add_done_callback(cb)
    assert fut.remove_done_callback(cb) == 2
    assert fut.remove_done_callback(cb) == 0
    fut.set_result(1)
    await asyncio.sleep(0)
    assert calls == []
