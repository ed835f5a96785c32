"""Model of https://github.com/aio-libs/async-timeout/issues/229 (same report on
aiohttp: https://github.com/aio-libs/aiohttp/issues/5979): "aiohttp swallows
asyncio.CancelledError during connection timeout".

The pre-4.0 ``async_timeout.timeout`` marks itself expired in its timer callback
and cancels the task; on exit it turns *any* CancelledError into TimeoutError
once it is marked expired. A client that retries connects on TimeoutError then
cannot be stopped if the outside cancellation arrives in the same loop
iteration as its connect timeout: the shutdown becomes a TimeoutError and the
client simply retries.

Natural timing: the app shuts the client down at 0.25 s, in the middle of the
first 0.5 s connect attempt; CancelledError propagates. Bad interleaving: the
loop is busy across both deadlines (e.g. from 0.05 s to 0.6 s), so the timeout
callback and the shutdown run together.
"""
import asyncio

import pytest

CONNECT_TIMEOUT = 0.5
SHUTDOWN_AT = 0.25


class Timeout:
    """Paraphrase of the old async-timeout context manager."""

    def __init__(self, delay):
        self._delay = delay
        self._expired = False
        self._handle = None
        self._task = None

    async def __aenter__(self):
        self._task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        self._handle = loop.call_later(self._delay, self._on_timeout)
        return self

    def _on_timeout(self):
        self._expired = True
        self._task.cancel()

    async def __aexit__(self, exc_type, exc, tb):
        self._handle.cancel()
        if exc_type is asyncio.CancelledError and self._expired:
            raise asyncio.TimeoutError from None
        return False


class ReconnectingClient:
    def __init__(self):
        self.attempts = 0

    async def _connect_once(self):
        await asyncio.Event().wait()        # the server never answers

    async def run(self):
        while True:
            self.attempts += 1
            try:
                async with Timeout(CONNECT_TIMEOUT):
                    await self._connect_once()
            except asyncio.TimeoutError:
                continue                    # retry


@pytest.mark.asyncio
async def test_shutdown_cancels_a_connecting_client():
    client = ReconnectingClient()
    task = asyncio.create_task(client.run())
    await asyncio.sleep(SHUTDOWN_AT)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2)
    try:
        assert task in done and task.cancelled(), (
            f"shutdown became a TimeoutError; client kept retrying "
            f"({client.attempts} attempts)")
    finally:
        for _ in range(20):
            if task.done():
                break
            task.cancel()
            await asyncio.sleep(0.01)
        await asyncio.gather(task, return_exceptions=True)
