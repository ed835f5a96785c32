"""A server-sent-events endpoint with heartbeats, replay and subscriber cleanup.

This is in the spirit of sse-starlette and aiohttp-sse tests.  Events are published
through an in-process broker and delivered over a long-lived HTTP response.
While a subscriber is idle the server writes a ``: ping`` comment every 200 ms.
A reconnecting client sends ``Last-Event-ID`` and gets the events it missed.
"""

import asyncio
import time

import pytest
import pytest_asyncio

HEARTBEAT = 0.2


class EventBroker:
    def __init__(self):
        self.history = []  # (id, event, data)
        self.subscribers = set()
        self.heartbeats_enabled = True

    def publish(self, event, data):
        item = (len(self.history) + 1, event, data)
        self.history.append(item)
        for queue in self.subscribers:
            queue.put_nowait(item)
        return item[0]


class SSEServer:
    def __init__(self, broker):
        self.broker = broker
        self.heartbeats_sent = 0
        self._tasks = set()
        self._writers = set()

    async def start(self):
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self):
        self._server.close()
        await self._server.wait_closed()
        for writer in list(self._writers):
            writer.close()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, reader, writer):
        self._tasks.add(asyncio.current_task())
        self._writers.add(writer)
        queue = asyncio.Queue()
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            last_id = 0
            for line in head.decode().split("\r\n"):
                if line.lower().startswith("last-event-id:"):
                    last_id = int(line.split(":", 1)[1])
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Cache-Control: no-cache\r\n\r\n")
            # Register before replaying so that nothing published meanwhile is lost.
            self.broker.subscribers.add(queue)
            for item in self.broker.history:
                if item[0] > last_id:
                    queue.put_nowait(item)
            disconnected = asyncio.create_task(reader.read())
            try:
                await self._pump(queue, writer, disconnected)
            finally:
                disconnected.cancel()
                await asyncio.gather(disconnected, return_exceptions=True)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.broker.subscribers.discard(queue)
            self._writers.discard(writer)
            writer.close()
            self._tasks.discard(asyncio.current_task())

    async def _pump(self, queue, writer, disconnected):
        sent_up_to = 0
        while not disconnected.done():
            getter = asyncio.create_task(queue.get())
            done, _ = await asyncio.wait({getter, disconnected}, timeout=HEARTBEAT,
                                         return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                await asyncio.gather(getter, return_exceptions=True)
                if getter.cancelled():
                    if disconnected.done():
                        return
                    if self.broker.heartbeats_enabled:
                        writer.write(b": ping\n\n")
                        self.heartbeats_sent += 1
                        await writer.drain()
                    continue
            event_id, event, data = getter.result()
            if event_id <= sent_up_to:
                continue
            sent_up_to = event_id
            writer.write(f"id: {event_id}\nevent: {event}\ndata: {data}\n\n".encode())
            await writer.drain()


class SSEClient:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.comments = []

    @classmethod
    async def connect(cls, port, last_event_id=None):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        request = "GET /events HTTP/1.1\r\nHost: sse\r\nAccept: text/event-stream\r\n"
        if last_event_id is not None:
            request += f"Last-Event-ID: {last_event_id}\r\n"
        writer.write((request + "\r\n").encode())
        head = await reader.readuntil(b"\r\n\r\n")
        assert b"text/event-stream" in head
        return cls(reader, writer)

    async def next_message(self):
        """Return ('comment', text) or ('event', dict)."""
        fields = {}
        while True:
            line = (await self.reader.readuntil(b"\n")).decode().rstrip("\n")
            if line == "":
                if fields:
                    return "event", fields
                continue
            if line.startswith(":"):
                self.comments.append(line[1:].strip())
                return "comment", line[1:].strip()
            name, _, value = line.partition(":")
            fields[name] = value.lstrip()

    async def next_event(self):
        while True:
            kind, payload = await self.next_message()
            if kind == "event":
                return payload

    async def close(self):
        self.writer.close()
        await self.writer.wait_closed()


@pytest_asyncio.fixture
async def broker_and_server():
    broker = EventBroker()
    server = await SSEServer(broker).start()
    yield broker, server
    await server.close()


async def wait_until(predicate):
    while not predicate():
        await asyncio.sleep(0.02)


@pytest.mark.asyncio
async def test_events_arrive_in_publication_order(broker_and_server):
    broker, server = broker_and_server
    client = await asyncio.wait_for(SSEClient.connect(server.port), 10)
    try:
        await asyncio.wait_for(wait_until(lambda: broker.subscribers), 10)
        for n in range(5):
            broker.publish("price", f"tick-{n}")
        events = [await asyncio.wait_for(client.next_event(), 10) for _ in range(5)]
    finally:
        await client.close()
    assert [e["data"] for e in events] == [f"tick-{n}" for n in range(5)]
    assert [int(e["id"]) for e in events] == [1, 2, 3, 4, 5]
    assert {e["event"] for e in events} == {"price"}


@pytest.mark.asyncio
async def test_idle_stream_carries_heartbeats(broker_and_server):
    _, server = broker_and_server
    started = time.monotonic()
    client = await asyncio.wait_for(SSEClient.connect(server.port), 10)
    try:
        for _ in range(3):
            kind, text = await asyncio.wait_for(client.next_message(), 10)
            assert (kind, text) == ("comment", "ping")
        elapsed = time.monotonic() - started
    finally:
        await client.close()
    # Each ping follows a full idle period of HEARTBEAT seconds.
    assert 3 * HEARTBEAT - 0.01 <= elapsed < 20 * 3 * HEARTBEAT


@pytest.mark.asyncio
async def test_reconnect_with_last_event_id_replays_missed_events(broker_and_server):
    broker, server = broker_and_server
    for n in range(3):
        broker.publish("log", f"line-{n}")
    client = await asyncio.wait_for(SSEClient.connect(server.port), 10)
    first = [await asyncio.wait_for(client.next_event(), 10) for _ in range(3)]
    await client.close()
    await asyncio.wait_for(wait_until(lambda: not broker.subscribers), 10)
    broker.publish("log", "line-3")
    await asyncio.sleep(0.5)  # client is away for a while
    broker.publish("log", "line-4")
    client = await asyncio.wait_for(
        SSEClient.connect(server.port, last_event_id=first[-1]["id"]), 10
    )
    try:
        missed = [await asyncio.wait_for(client.next_event(), 10) for _ in range(2)]
        broker.publish("log", "line-5")
        live = await asyncio.wait_for(client.next_event(), 10)
    finally:
        await client.close()
    assert [e["data"] for e in first] == ["line-0", "line-1", "line-2"]
    assert [e["data"] for e in missed] == ["line-3", "line-4"]
    assert (live["id"], live["data"]) == ("6", "line-5")


@pytest.mark.asyncio
async def test_client_watchdog_fires_when_heartbeats_stop(broker_and_server):
    broker, server = broker_and_server
    client = await asyncio.wait_for(SSEClient.connect(server.port), 10)
    try:
        assert (await asyncio.wait_for(client.next_message(), 10))[0] == "comment"
        broker.heartbeats_enabled = False
        # Drain a ping that may already be in flight, then expect silence.
        started = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            while True:
                await asyncio.wait_for(client.next_message(), 0.6)
                started = time.monotonic()
        assert time.monotonic() - started >= 0.6 - 0.01
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_disconnected_subscribers_are_removed(broker_and_server):
    broker, server = broker_and_server
    clients = [await asyncio.wait_for(SSEClient.connect(server.port), 10) for _ in range(3)]
    await asyncio.wait_for(wait_until(lambda: len(broker.subscribers) == 3), 10)
    for c in clients:
        await c.close()
    await asyncio.wait_for(wait_until(lambda: not broker.subscribers), 10)
    broker.publish("noop", "nobody listening")
    assert broker.history[-1][0] == 1
