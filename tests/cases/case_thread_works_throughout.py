"""A thread that works for the whole test (a poller) beside a coroutine whose waits are guarded by a
20 s timeout.

The search stalls steps close to the deadlines it sees, here the 20 s guard. While a thread works, a
stall passes in real time (the thread must progress as much as it would on a machine that slow);
this thread works until the test ends, so a stall close to the guard was 20 s of real time in each
run that met one. A stall that passes in real time is cut at 1 s.
"""

import asyncio
import threading
import time

import pytest


@pytest.mark.asyncio
async def test_a_poller_works_beside_a_guarded_wait() -> None:
    stop = threading.Event()
    polls = []

    def poller() -> None:
        while not stop.is_set():
            polls.append(1)
            time.sleep(0.005)

    thread = threading.Thread(target=poller, name="poller")
    thread.start()
    try:
        for _ in range(3):
            await asyncio.wait_for(asyncio.sleep(0.01), 20)
    finally:
        stop.set()
        thread.join()
