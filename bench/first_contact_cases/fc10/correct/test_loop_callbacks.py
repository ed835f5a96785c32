"""Loop-level API tests in the style of a library that schedules callbacks
directly (a scheduler like APScheduler's asyncio executor, aiohttp helpers,
a metrics flusher): call_soon FIFO, call_later/call_at handles and cancel(),
timers 0.5 s apart, the loop exception handler, loop identity, all_tasks().
"""
import asyncio

import pytest

EPS = 0.01


@pytest.mark.asyncio
async def test_call_soon_runs_callbacks_fifo_with_args():
    loop = asyncio.get_running_loop()
    seen = []
    done = asyncio.Event()
    for i in range(10):
        loop.call_soon(seen.append, i)
    loop.call_soon(done.set)
    await asyncio.wait_for(done.wait(), 10)
    assert seen == list(range(10))


@pytest.mark.asyncio
async def test_cancelled_timer_handle_never_runs():
    loop = asyncio.get_running_loop()
    fired = []
    t0 = loop.time()
    handle = loop.call_later(0.05, fired.append, "late")
    assert handle.when() >= t0 + 0.05
    handle.cancel()
    assert handle.cancelled()
    soon = loop.call_soon(fired.append, "soon-cancelled")
    soon.cancel()
    await asyncio.sleep(0.2)
    assert fired == []


@pytest.mark.asyncio
async def test_timers_half_a_second_apart_fire_in_deadline_order():
    loop = asyncio.get_running_loop()
    fired = []
    both = asyncio.Event()
    t0 = loop.time()

    def record(name):
        fired.append((name, loop.time() - t0))
        if len(fired) == 2:
            both.set()

    loop.call_at(t0 + 0.6, record, "second")
    loop.call_later(0.05, record, "first")
    await asyncio.wait_for(both.wait(), 15)
    assert [n for n, _ in fired] == ["first", "second"]
    assert fired[0][1] >= 0.05 - EPS
    assert fired[1][1] >= 0.6 - EPS


@pytest.mark.asyncio
async def test_exception_handler_receives_callback_errors():
    loop = asyncio.get_running_loop()
    contexts = []
    got = asyncio.Event()

    def handler(lp, context):
        contexts.append(context)
        got.set()

    def broken_callback():
        raise ZeroDivisionError("metrics flush failed")

    previous = loop.get_exception_handler()
    loop.set_exception_handler(handler)
    try:
        loop.call_soon(broken_callback)
        await asyncio.wait_for(got.wait(), 10)
    finally:
        loop.set_exception_handler(previous)
    assert len(contexts) == 1
    ctx = contexts[0]
    assert isinstance(ctx["exception"], ZeroDivisionError)
    assert ctx["message"]                       # documented context keys
    assert isinstance(ctx.get("handle"), asyncio.Handle)
    assert loop.get_exception_handler() is previous


@pytest.mark.asyncio
async def test_running_loop_identity_in_tasks_and_callbacks():
    loop = asyncio.get_running_loop()
    seen = {}
    cb_done = asyncio.Event()

    async def child():
        seen["task"] = asyncio.get_running_loop()
        seen["get_event_loop"] = asyncio.get_event_loop()
        seen["current"] = asyncio.current_task()

    def callback():
        seen["callback"] = asyncio.get_running_loop()
        cb_done.set()

    t = asyncio.create_task(child())
    await t
    loop.call_soon(callback)
    await asyncio.wait_for(cb_done.wait(), 10)
    assert seen["task"] is loop and seen["get_event_loop"] is loop
    assert seen["callback"] is loop
    assert seen["current"] is t
    assert t.get_loop() is loop


@pytest.mark.asyncio
async def test_all_tasks_contains_exactly_the_tasks_we_started_while_pending():
    gate = asyncio.Event()

    async def parked():
        await gate.wait()

    mine = {asyncio.create_task(parked(), name=f"parked-{i}") for i in range(3)}
    current = asyncio.current_task()
    live = asyncio.all_tasks()
    assert current in live
    assert mine <= live
    assert sum(1 for t in live if t.get_name().startswith("parked-")) == 3
    gate.set()
    await asyncio.wait_for(asyncio.gather(*mine), 10)
    assert not (mine & asyncio.all_tasks())
