"""Channel.rpc() timeout path calls close(), which re-enters rpc() under the same lock.

Report: https://github.com/mosquito/aiormq/issues/83 ("Deadlock when
connection close on app teardown").

Race: ``rpc()`` holds ``self.lock`` while it waits for the broker's reply.  If
the reply does not arrive within the RPC timeout, the ``TimeoutError`` handler
calls ``self.close(e)``; ``close()`` sends ``Channel.Close`` through
``rpc()``, which tries to take ``self.lock`` again.  asyncio.Lock is not
re-entrant, so the task waits for itself forever.  Only happens when the
broker is slower than the timeout.
Shared state: ``Channel.lock``; the await is ``async with self.lock`` inside
the nested ``rpc()`` reached from the ``wait_for`` timeout handler.

Under plain pytest the fake broker replies in 5 ms against a 100 ms RPC
timeout, so the handler never runs and the test passes.
"""
import asyncio

import pytest

EXPECTED = {"cause": "deadlock", "resource": "Channel.lock"}


class FakeBroker:
    def __init__(self, latency):
        self.latency = latency
        self.frames = []

    async def call(self, frame):
        self.frames.append(frame)
        await asyncio.sleep(self.latency)
        return f"{frame}-Ok"


class Channel:
    def __init__(self, broker, rpc_timeout):
        self.broker = broker
        self.rpc_timeout = rpc_timeout
        self.lock = asyncio.Lock()
        self.closing = False
        self.closed = False

    async def rpc(self, frame):
        async with self.lock:
            try:
                return await asyncio.wait_for(self.broker.call(frame), self.rpc_timeout)
            except asyncio.TimeoutError as e:
                await self.close(e)  # BUG: re-enters rpc() while holding self.lock
                raise

    async def close(self, exc=None):
        if self.closing:
            return
        self.closing = True
        try:
            await self.rpc("Channel.Close")
        except asyncio.TimeoutError:
            pass
        self.closed = True


@pytest.mark.asyncio
async def test_publish_then_close_never_hangs():
    channel = Channel(FakeBroker(latency=0.005), rpc_timeout=0.1)

    async def scenario():
        try:
            await channel.rpc("Basic.Publish")
        except asyncio.TimeoutError:
            pass  # a timed-out publish is acceptable
        await channel.close()

    try:
        await asyncio.wait_for(scenario(), timeout=1.0)
    except asyncio.TimeoutError:
        pytest.fail(f"channel deadlocked; frames sent: {channel.broker.frames}")
    assert channel.closed
