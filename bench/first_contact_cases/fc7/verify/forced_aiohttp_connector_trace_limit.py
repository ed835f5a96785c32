"""Connector limit exceeded when tracing hooks run between check and claim.

Report: https://github.com/aio-libs/aiohttp/issues/5259 (fix: PR #5285)
"BaseConnector limit and limit_per_host don't work with tracing enabled".

Race: ``connect()`` computes the number of available connections, and if one
is free it goes on to ``await`` the configured trace hooks *before* it records
the connection in ``_acquired``.  Any other task that calls ``connect()`` while
the first one is suspended in a trace hook sees the same free slot and also
proceeds, so more than ``limit`` connections end up in ``_acquired``.
Shared state: ``Connector._acquired`` (the slot count); the await that opens
the window is ``await trace()`` between ``_available()`` and ``_acquired.add``.

Under plain pytest the staggered client start times keep each check/claim
pair from overlapping, so the test passes.
"""
import asyncio
import collections

import pytest

EXPECTED = {"cause": "check_then_act", "resource": "_acquired"}


class Connector:
    def __init__(self, limit, traces):
        self.limit = limit
        self._acquired = set()
        self._waiters = collections.deque()
        self._traces = traces
        self.peak = 0

    def _available(self):
        return self.limit - len(self._acquired)

    async def connect(self):
        if self._available() <= 0:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            finally:
                if fut in self._waiters:
                    self._waiters.remove(fut)
        for trace in self._traces:  # BUG: suspension between check and claim
            await trace()
        proto = object()
        self._acquired.add(proto)
        self.peak = max(self.peak, len(self._acquired))
        return proto

    def release(self, proto):
        self._acquired.discard(proto)
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                break


async def on_connection_create_start():
    await asyncio.sleep(0.001)  # e.g. a tracing hook that logs asynchronously


async def client(conn, start, hold):
    await asyncio.sleep(start)
    proto = await conn.connect()
    await asyncio.sleep(hold)
    conn.release(proto)


@pytest.mark.asyncio
async def test_forced_connector_never_exceeds_limit():
    conn = Connector(limit=1, traces=[on_connection_create_start])
    await asyncio.wait_for(
        asyncio.gather(
            client(conn, 0.0, 0.02),
            client(conn, 0.01, 0.02),
            client(conn, 0.0215, 0.005),
        ),
        timeout=5,
    )
    assert conn.peak <= conn.limit, f"{conn.peak} concurrent connections, limit {conn.limit}"
