"""asyncio.timeout / timeout_at (3.11) and cancelling()/uncancel(), as used by an
RPC client with per-call deadlines (grpclib / aiohttp ClientTimeout style):
deadlines that fire, deadlines moved by reschedule(), nested timeouts, and an
outside cancellation that must stay a CancelledError.
"""
import asyncio

import pytest

EPS = 0.01


async def never():
    await asyncio.Event().wait()


@pytest.mark.asyncio
async def test_timeout_fires_no_earlier_than_its_delay():
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2) as cm:
            await never()
    elapsed = loop.time() - t0
    assert cm.expired()
    assert 0.2 - EPS <= elapsed < 10


@pytest.mark.asyncio
async def test_timeout_at_uses_loop_time_deadline():
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    deadline = t0 + 0.3
    with pytest.raises(TimeoutError):
        async with asyncio.timeout_at(deadline) as cm:
            assert cm.when() == deadline
            await never()
    assert loop.time() >= deadline - EPS


@pytest.mark.asyncio
async def test_reschedule_to_later_lets_slow_call_finish():
    loop = asyncio.get_running_loop()
    reply = loop.create_future()
    t0 = loop.time()
    loop.call_later(0.3, reply.set_result, "pong")
    async with asyncio.timeout(0.05) as cm:
        # moved before the first await, so the 0.05 s deadline never applies
        cm.reschedule(loop.time() + 30)
        assert await reply == "pong"
    assert not cm.expired()
    assert loop.time() - t0 >= 0.3 - EPS


@pytest.mark.asyncio
async def test_reschedule_to_earlier_and_to_none():
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(30) as cm:
            cm.reschedule(loop.time() + 0.2)
            await never()
    assert loop.time() - t0 >= 0.2 - EPS

    done = loop.create_future()
    loop.call_later(0.1, done.set_result, None)
    async with asyncio.timeout(0.01) as cm2:
        cm2.reschedule(None)
        await done
    assert cm2.when() is None and not cm2.expired()


@pytest.mark.asyncio
async def test_inner_timeout_does_not_leak_into_outer_scope():
    task = asyncio.current_task()
    async with asyncio.timeout(30) as outer:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.1):
                await never()
        assert task.cancelling() == 0
        await asyncio.sleep(0.01)     # the outer scope keeps working
    assert not outer.expired()


@pytest.mark.asyncio
async def test_outside_cancel_stays_cancelled_error_and_uncancel_resets_count():
    entered = asyncio.Event()
    seen = {}

    async def call_with_deadline():
        async with asyncio.timeout(30):
            entered.set()
            await never()

    task = asyncio.create_task(call_with_deadline())
    await asyncio.wait_for(entered.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()

    async def resilient():
        try:
            entered2.set()
            await never()
        except asyncio.CancelledError:
            me = asyncio.current_task()
            seen["cancelling"] = me.cancelling()
            seen["after_uncancel"] = me.uncancel()
        await asyncio.sleep(0.01)      # keeps running after uncancel
        return "recovered"

    entered2 = asyncio.Event()
    t2 = asyncio.create_task(resilient())
    await asyncio.wait_for(entered2.wait(), 10)
    t2.cancel()
    assert await asyncio.wait_for(t2, 10) == "recovered"
    assert seen == {"cancelling": 1, "after_uncancel": 0}
