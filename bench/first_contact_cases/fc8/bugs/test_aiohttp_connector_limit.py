"""Model of aiohttp's BaseConnector exceeding its connection ``limit``.

Report: https://github.com/aio-libs/aiohttp/issues/4936
("Race condition in BaseConnector leads to exceeding connection limit";
see also https://github.com/aio-libs/aiohttp/issues/5259 for the same window
widened by awaited tracing hooks).

Paraphrase of the report: when a connection is released, the connector picks
the first queued waiter and resolves its future, assuming the waiter will run
next and take the freed slot.  The waiter only resumes later, though, and after
resuming it does not check availability again.  If a brand-new ``connect()``
call runs in between, it sees a free slot and takes it; then the woken waiter
resumes and opens another connection as well, so more connections than
``limit`` are in use at once.  The tracing variant (#5259) is the same race:
``connect()`` awaits the user's trace callbacks between being woken and
actually taking the connection.

The model below keeps only that logic: a limit, a FIFO of waiter futures, a
release that wakes the first waiter, an awaited ``on_connection_queued_end``
trace hook after waking, and no re-check.  In the test, request ``a`` holds the
only slot, ``b`` queues, ``a`` releases at ~50 ms and ``c`` arrives at ~100 ms.
Normally ``b`` has long finished its trace hook and taken the slot before ``c``
arrives, so ``c`` queues and the peak stays at 1.  If ``b``'s resumption (its
trace hook round trip) takes longer than the gap, ``c`` runs first, grabs the
"free" slot, and ``b`` then connects too while ``c`` still holds its
connection: the peak becomes 2.
"""

import asyncio
import collections

import pytest

EXPECTED = {"cause": "check_then_act", "resource": "BaseConnector._acquired (connection limit)"}

TRACE_HOOK_LATENCY = 0.001  # e.g. a metrics/logging call awaited by the hook
HOLD_A = 0.05
START_C = 0.10
HOLD_C = 0.10


class Connector:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._acquired: set[int] = set()
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        self._next_id = 0
        self.peak = 0

    def _available(self) -> int:
        return self.limit - len(self._acquired)

    async def _trace_queued_end(self) -> None:
        await asyncio.sleep(TRACE_HOOK_LATENCY)

    async def connect(self) -> int:
        if self._available() <= 0:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            finally:
                if fut in self._waiters:
                    self._waiters.remove(fut)
            await self._trace_queued_end()
            # BUG (as reported): no re-check of availability after waking up.
        self._next_id += 1
        conn = self._next_id
        self._acquired.add(conn)
        self.peak = max(self.peak, len(self._acquired))
        return conn

    def release(self, conn: int) -> None:
        self._acquired.discard(conn)
        if self._available() > 0:
            while self._waiters:
                waiter = self._waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)
                    break


@pytest.mark.asyncio
async def test_connector_never_exceeds_limit():
    connector = Connector(limit=1)
    log: list[str] = []

    async def request(name: str, start: float, hold: float) -> None:
        await asyncio.sleep(start)
        conn = await connector.connect()
        log.append(f"{name} connected")
        try:
            await asyncio.sleep(hold)  # send request / read response
        finally:
            connector.release(conn)

    await asyncio.wait_for(
        asyncio.gather(
            request("a", 0.0, HOLD_A),
            request("b", 0.01, 0.01),
            request("c", START_C, HOLD_C),
        ),
        timeout=10,
    )
    assert sorted(log) == ["a connected", "b connected", "c connected"]
    assert connector.peak <= connector.limit
