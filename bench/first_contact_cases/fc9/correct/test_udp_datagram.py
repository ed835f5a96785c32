"""UDP request/response over ``DatagramProtocol`` on 127.0.0.1, with retransmission.

This is shaped like the tests of an asyncio DNS stub resolver or a CoAP client
(aiodns/aiocoap).  Requests carry an id, replies are matched by id whatever
order they arrive in, a lost datagram is retransmitted after a timeout, and a
server that never answers makes the client give up after its attempts.
"""

import asyncio
import json
import time

import pytest
import pytest_asyncio


class EchoServerProtocol(asyncio.DatagramProtocol):
    def __init__(self):
        self.seen = {}  # request id -> number of datagrams received
        self.drop_first = set()
        self.pending = set()

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        request = json.loads(data)
        rid = request["id"]
        self.seen[rid] = self.seen.get(rid, 0) + 1
        if request.get("op") == "blackhole":
            return
        if rid in self.drop_first and self.seen[rid] == 1:
            return  # simulate a lost datagram
        delay = request.get("delay", 0)
        reply = json.dumps({"id": rid, "echo": request["payload"]}).encode()
        if delay:
            handle = asyncio.get_running_loop().call_later(delay, self._send, reply, addr)
            self.pending.add(handle)
        else:
            self._send(reply, addr)

    def _send(self, reply, addr):
        if not self.transport.is_closing():
            self.transport.sendto(reply, addr)

    def close(self):
        for handle in self.pending:
            handle.cancel()
        self.transport.close()


class RequestClientProtocol(asyncio.DatagramProtocol):
    def __init__(self):
        self.waiters = {}
        self.sent = {}

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        reply = json.loads(data)
        waiter = self.waiters.get(reply["id"])
        if waiter is not None and not waiter.done():
            waiter.set_result(reply)

    def error_received(self, exc):
        for waiter in self.waiters.values():
            if not waiter.done():
                waiter.set_exception(exc)

    async def request(self, rid, payload, *, timeout=0.5, attempts=4, **extra):
        waiter = asyncio.get_running_loop().create_future()
        self.waiters[rid] = waiter
        message = json.dumps({"id": rid, "payload": payload, **extra}).encode()
        try:
            for _ in range(attempts):
                self.transport.sendto(message)
                self.sent[rid] = self.sent.get(rid, 0) + 1
                try:
                    return await asyncio.wait_for(asyncio.shield(waiter), timeout)
                except asyncio.TimeoutError:
                    continue
            raise asyncio.TimeoutError(f"no reply to {rid} after {attempts} attempts")
        finally:
            del self.waiters[rid]
            waiter.cancel()


@pytest_asyncio.fixture
async def udp_server():
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_datagram_endpoint(
        EchoServerProtocol, local_addr=("127.0.0.1", 0)
    )
    proto.address = transport.get_extra_info("sockname")
    yield proto
    proto.close()


@pytest_asyncio.fixture
async def udp_client(udp_server):
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_datagram_endpoint(
        RequestClientProtocol, remote_addr=udp_server.address
    )
    yield proto
    transport.close()


@pytest.mark.asyncio
async def test_single_round_trip(udp_client):
    reply = await asyncio.wait_for(udp_client.request("r1", "hello"), 10)
    assert reply == {"id": "r1", "echo": "hello"}


@pytest.mark.asyncio
async def test_replies_are_matched_by_id_not_by_order(udp_client):
    # Later requests are answered sooner; matching must rely on the id.
    requests = [udp_client.request(f"q{n}", n * n, delay=0.05 * (5 - n), timeout=5)
                for n in range(5)]
    replies = await asyncio.wait_for(asyncio.gather(*requests), 20)
    assert [r["echo"] for r in replies] == [0, 1, 4, 9, 16]
    assert [r["id"] for r in replies] == [f"q{n}" for n in range(5)]


@pytest.mark.asyncio
async def test_lost_datagram_is_retransmitted(udp_server, udp_client):
    udp_server.drop_first.add("lossy")
    started = time.monotonic()
    reply = await asyncio.wait_for(
        udp_client.request("lossy", "again", timeout=0.2, attempts=30), 20
    )
    elapsed = time.monotonic() - started
    assert reply["echo"] == "again"
    assert udp_client.sent["lossy"] >= 2
    assert udp_server.seen["lossy"] >= 2
    assert 0.2 - 0.01 <= elapsed < 20


@pytest.mark.asyncio
async def test_silent_server_exhausts_attempts(udp_server, udp_client):
    started = time.monotonic()
    with pytest.raises(asyncio.TimeoutError, match="after 3 attempts"):
        await udp_client.request("void", None, op="blackhole", timeout=0.1, attempts=3)
    assert time.monotonic() - started >= 3 * 0.1 - 0.01
    assert udp_client.sent["void"] == 3
    await asyncio.wait_for(_until(lambda: udp_server.seen.get("void", 0) >= 1), 10)


@pytest.mark.asyncio
async def test_large_datagram_round_trip(udp_client):
    payload = "x" * 60_000  # close to the 64 KiB UDP limit, fine on loopback
    reply = await asyncio.wait_for(udp_client.request("big", payload, timeout=2), 10)
    assert len(reply["echo"]) == 60_000


async def _until(predicate):
    while not predicate():
        await asyncio.sleep(0.01)
