"""ThreadSafeEvent: set from threads, awaited from loops."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from bridge import ThreadSafeEvent
from conftest import EPS, LONG, wait_until


@pytest.mark.asyncio
async def test_thread_sets_event_awaited_on_loop():
    ev = ThreadSafeEvent()

    def later():
        time.sleep(0.05)
        ev.set()

    t0 = time.monotonic()
    t = threading.Thread(target=later, name="bridge-setter")
    t.start()
    assert await asyncio.wait_for(ev.wait(), LONG) is True
    assert time.monotonic() - t0 >= 0.05 - EPS
    await asyncio.to_thread(t.join, LONG)


@pytest.mark.asyncio
async def test_already_set_returns_immediately():
    ev = ThreadSafeEvent()
    ev.set()
    ev.set()
    assert ev.set_count == 1
    assert await ev.wait()


@pytest.mark.asyncio
async def test_loop_side_set_releases_thread_waiter():
    ev = ThreadSafeEvent()
    waiting = asyncio.create_task(asyncio.to_thread(ev.wait_sync, LONG))
    await asyncio.sleep(0.01)
    ev.set()
    assert await asyncio.wait_for(waiting, LONG) is True


@pytest.mark.asyncio
async def test_one_set_wakes_waiters_on_two_loops(loop_thread):
    ev = ThreadSafeEvent()
    local = [asyncio.create_task(ev.wait()) for _ in range(3)]
    remote = [loop_thread.submit(ev.wait()) for _ in range(3)]
    await wait_until(lambda: len(ev._waiters) == 6)
    setter = threading.Thread(target=ev.set, name="bridge-setter2")
    setter.start()
    assert await asyncio.wait_for(asyncio.gather(*local), LONG) == [True] * 3
    assert [f.result(LONG) for f in remote] == [True] * 3
    await asyncio.to_thread(setter.join, LONG)


@pytest.mark.asyncio
async def test_cancelled_waiter_is_forgotten():
    ev = ThreadSafeEvent()
    w = asyncio.create_task(ev.wait())
    await wait_until(lambda: len(ev._waiters) == 1)
    w.cancel()
    with pytest.raises(asyncio.CancelledError):
        await w
    assert ev._waiters == []


@pytest.mark.asyncio
async def test_clear_makes_waiters_wait_again():
    ev = ThreadSafeEvent()
    ev.set()
    ev.clear()
    w = asyncio.create_task(ev.wait())
    done, _ = await asyncio.wait({w}, timeout=0.05)
    assert not done  # nobody set it again
    await asyncio.to_thread(ev.set)
    assert await asyncio.wait_for(w, LONG)


@pytest.mark.asyncio
async def test_set_from_thread_wakes_an_idle_loop_promptly():
    # Nothing else is scheduled: only call_soon_threadsafe's self-pipe write
    # can wake the selector.  (asyncio.Event.set() from a thread would not.)
    ev = ThreadSafeEvent()
    ready = threading.Event()

    def later():
        ready.wait(LONG)
        time.sleep(0.02)
        ev.set()

    t = threading.Thread(target=later, name="bridge-setter3")
    t.start()
    waiter = asyncio.create_task(ev.wait())
    await asyncio.sleep(0)
    ready.set()
    t0 = time.monotonic()
    await asyncio.wait_for(waiter, LONG)
    assert time.monotonic() - t0 < LONG / 2
    await asyncio.to_thread(t.join, LONG)
