"""Heartbeat / keepalive tests, modelled on a websocket or AMQP client that runs a
long-lived background task pinging the peer every 30-60 seconds, and on a
lease-renewal loop in a distributed-lock client.

The background tasks sleep for tens of seconds; tests never wait for them,
they observe the immediate first beat and then cancel the task at the end (in
the test body or in fixture teardown) and check that cancellation cleans up.
"""

import asyncio
import contextlib
import time

import pytest
import pytest_asyncio


class Connection:
    def __init__(self) -> None:
        self.sent: list[tuple[str, float]] = []
        self.closed = False

    async def send(self, frame: str) -> None:
        if self.closed:
            raise ConnectionError("closed")
        await asyncio.sleep(0)
        self.sent.append((frame, time.monotonic()))


class KeepAlive:
    def __init__(self, conn: Connection, interval: float) -> None:
        self.conn = conn
        self.interval = interval
        self.task: asyncio.Task | None = None
        self.first_beat = asyncio.Event()
        self.stopped_cleanly = False

    async def _run(self) -> None:
        try:
            while True:
                await self.conn.send("PING")
                self.first_beat.set()
                await asyncio.sleep(self.interval)
        except asyncio.CancelledError:
            self.stopped_cleanly = True
            raise

    def start(self) -> None:
        self.task = asyncio.create_task(self._run(), name="keepalive")

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


@pytest_asyncio.fixture
async def keepalive():
    conn = Connection()
    ka = KeepAlive(conn, interval=45)
    ka.start()
    yield ka
    await ka.stop()
    assert ka.stopped_cleanly


@pytest.mark.asyncio
async def test_first_ping_is_sent_immediately(keepalive):
    await asyncio.wait_for(keepalive.first_beat.wait(), timeout=10)
    assert [f for f, _ in keepalive.conn.sent] == ["PING"]


@pytest.mark.asyncio
async def test_no_second_ping_before_interval(keepalive):
    await asyncio.wait_for(keepalive.first_beat.wait(), timeout=10)
    await asyncio.sleep(0.2)
    # The next ping is 45 s away.
    assert len(keepalive.conn.sent) == 1
    assert not keepalive.task.done()


class LeaseRenewer:
    """Renews a lease every ``ttl / 3`` seconds until told to stop."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self.renewals = 0
        self.released = False
        self._stop = asyncio.Event()

    async def run(self) -> None:
        try:
            while not self._stop.is_set():
                self.renewals += 1
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=self.ttl / 3)
        finally:
            self.released = True

    def stop(self) -> None:
        self._stop.set()


@pytest.mark.asyncio
async def test_lease_renewer_stops_on_event_without_waiting_interval():
    renewer = LeaseRenewer(ttl=180)  # renew every 60 s
    task = asyncio.create_task(renewer.run())
    await asyncio.sleep(0.05)
    assert renewer.renewals == 1
    start = time.monotonic()
    renewer.stop()
    await asyncio.wait_for(task, timeout=10)
    assert time.monotonic() - start < 5.0
    assert renewer.released
    assert renewer.renewals == 1


@pytest.mark.asyncio
async def test_many_heartbeats_cancelled_together():
    conns = [Connection() for _ in range(20)]
    beats = [KeepAlive(c, interval=30 + i) for i, c in enumerate(conns)]
    for b in beats:
        b.start()
    await asyncio.wait_for(asyncio.gather(*(b.first_beat.wait() for b in beats)), timeout=10)
    tasks = [b.task for b in beats]
    for t in tasks:
        t.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in results)
    assert all(b.stopped_cleanly for b in beats)
    assert all(len(c.sent) == 1 for c in conns)
