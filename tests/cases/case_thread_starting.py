"""A thread that starts another: while the new one has not run its first line it has no frame, and
its starter waits for it with no timeout (Thread.start), so every thread the run can see is idle.
A loop that took that for idle jumped its clock past the test's 60 s timeout. Passes under plain
pytest: the result comes in milliseconds."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest


@pytest.mark.asyncio
async def test_a_thread_that_starts_a_thread() -> None:
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def inner() -> None:
        time.sleep(0.01)
        loop.call_soon_threadsafe(done.set_result, "done")

    def outer() -> None:
        t = threading.Thread(target=inner)
        t.start()
        t.join()

    threading.Thread(target=outer).start()
    assert await asyncio.wait_for(done, 60) == "done"
