"""Input for tests/test_cannot_lie.py: a time compared by reading the clock, while the only timer
pending is a library's own timeout (not asyncio's).

aiohttp's client arms its total timeout with loop.call_at (its own TimeoutHandle, 300 s), and
aiohttp-session's cookie storage compares a cookie's max_age with time.time(). On stock asyncio the
test passes every time: its steps take microseconds. Only a step stalled past the 10 s max_age fails
it -- a slow machine, not a race. The systematic search swept that step's delay up to the moment the
300 s timer would fire (a deadline the program armed, which it does not sweep across when it is
asyncio's own), and the clock read then failed: a plain red at first contact.
"""

import asyncio
import time

import pytest

MAX_AGE = 10.0
TOTAL_TIMEOUT = 300.0


@pytest.mark.asyncio
async def test_session_read_within_its_max_age() -> None:
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    total = loop.call_later(TOTAL_TIMEOUT, task.cancel)  # a library's own timeout: cancels the request
    try:
        created = time.time()  # the cookie's timestamp
        await asyncio.sleep(0)  # the request goes out and comes back
        await asyncio.sleep(0)
        assert time.time() - created < MAX_AGE, "the session cookie expired before it was read back"
    finally:
        total.cancel()
