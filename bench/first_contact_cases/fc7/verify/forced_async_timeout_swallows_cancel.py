"""Explicit task.cancel() turned into TimeoutError by an expired timeout.

Report: https://github.com/aio-libs-abandoned/async-timeout/issues/229
(also https://github.com/aio-libs/aiohttp/issues/5979).

Race: when the timeout fires, ``_on_timeout`` calls ``task.cancel()`` and sets
``self._cancelled = True``.  ``__aexit__`` converts *any* CancelledError into
TimeoutError when that flag is set.  If an outside ``task.cancel()`` arrives
after the timeout callback ran but before the task resumed (or the two are
delivered together), the outside cancellation is swallowed: the retry loop
catches TimeoutError and keeps going, and the task finishes normally instead of
being cancelled.
Shared state: ``Timeout._cancelled`` / the task's pending cancellation; the
await is the guarded ``await asyncio.sleep(1)`` inside ``async with Timeout``.

Under plain pytest the supervisor cancels 20 ms before the first timeout, so
the CancelledError propagates and the test passes.
"""
import asyncio

import pytest

EXPECTED = {"cause": "cancel_swallowed", "resource": "_cancelled"}


class Timeout:
    def __init__(self, delay):
        self._delay = delay
        self._cancelled = False

    async def __aenter__(self):
        self._task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        self._handle = loop.call_later(self._delay, self._on_timeout)
        return self

    def _on_timeout(self):
        self._task.cancel()
        self._cancelled = True

    async def __aexit__(self, exc_type, exc, tb):
        self._handle.cancel()
        if exc_type is asyncio.CancelledError and self._cancelled:
            raise asyncio.TimeoutError from None  # BUG: may eat a foreign cancel
        return None


async def fetch_with_retries(log):
    for _ in range(3):
        try:
            async with Timeout(0.01):
                await asyncio.sleep(1)  # slow upstream
            return "ok"
        except asyncio.TimeoutError:
            log.append("timeout")
    return "gave-up"


@pytest.mark.asyncio
async def test_forced_supervisor_cancel_is_honoured():
    log = []
    worker = asyncio.create_task(fetch_with_retries(log))
    await asyncio.sleep(0.01)
    assert worker.cancel()
    outcome = await asyncio.gather(worker, return_exceptions=True)
    assert worker.cancelled(), f"cancel was swallowed: {outcome!r}, log={log}"
