"""A thread that hands the loop work with call_soon, not call_soon_threadsafe, while the loop waits.

Stock asyncio's loop blocks in select() when nothing is ready; only a descriptor wakes it (the
self-pipe that call_soon_threadsafe writes to, a socket) or the timeout of its next timer. A
callback another thread puts on the ready queue with plain call_soon -- an asyncio.Event set or a
future resolved from a thread -- waits there until the loop wakes for something else. Here the
thread sets the Event 50 ms in and the loop's next timer is 0.5 s away: on stock asyncio the wait
ends at the timer, never at the set(). A loop that noticed the callback earlier would hide every bug
of this kind (the "loop sleeps through Event.set() from a thread" reports).
"""

import asyncio
import threading
import time

import pytest

TIMER = 0.5


def set_from_a_thread(event: asyncio.Event, after: float) -> threading.Thread:
    def driver() -> None:
        time.sleep(after)
        event.set()  # not thread-safe: the waiter's wake-up is queued, the loop is not woken

    thread = threading.Thread(target=driver, name="driver")
    thread.start()
    return thread


@pytest.mark.asyncio
async def test_the_waiter_runs_when_the_loop_wakes_for_its_timer() -> None:
    loop = asyncio.get_running_loop()
    event = asyncio.Event()
    start = loop.time()
    thread = set_from_a_thread(event, 0.05)
    loop.call_later(TIMER, lambda: None)
    await event.wait()
    waited = loop.time() - start
    thread.join()
    assert waited >= TIMER - 0.01, f"woke after {waited:.3f} s, before the loop's only timer"


@pytest.mark.asyncio
async def test_nothing_wakes_the_loop() -> None:
    # Stock asyncio blocks here forever: no timer, no descriptor, the wake-up queued unseen.
    # (Not run under plain pytest: it would hang.)
    event = asyncio.Event()
    thread = set_from_a_thread(event, 0.05)
    await event.wait()
    thread.join()
