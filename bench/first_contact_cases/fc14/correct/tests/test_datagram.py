import asyncio
import time

import pytest
import pytest_asyncio

from wire.datagram import UdpClient, UdpReplyServer

from conftest import EPS


@pytest_asyncio.fixture
async def udp():
    """Start a reply server on 127.0.0.1:0 and hand out connected clients; closes all."""
    loop = asyncio.get_running_loop()
    made = []

    async def _start(**server_kwargs):
        transport, server = await loop.create_datagram_endpoint(
            lambda: UdpReplyServer(**server_kwargs), local_addr=("127.0.0.1", 0))
        made.append(transport)
        client = await UdpClient.connect(transport.get_extra_info("sockname"))
        made.append(client.transport)
        return server, client

    yield _start
    for transport in made:
        transport.close()
    await asyncio.sleep(0)  # let the transports run connection_lost


@pytest.mark.asyncio
async def test_request_reply(udp):
    server, client = await udp()
    assert await client.request(b"hello", retries=50) == b"HELLO"
    assert server.answered >= 1 and client.errors == []


@pytest.mark.asyncio
async def test_lost_datagrams_are_retransmitted(udp):
    server, client = await udp(drop_first=2)
    t0 = time.monotonic()
    assert await client.request(b"again", interval=0.05, retries=50) == b"AGAIN"
    # two attempts had to time out before the third could be answered
    assert time.monotonic() - t0 >= 2 * 0.05 - EPS
    assert server.dropped == 2
    assert client.sent >= 3


@pytest.mark.asyncio
async def test_gives_up_after_the_last_retry(udp):
    server, client = await udp(drop_first=1000)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(TimeoutError):
        await client.request(b"void", interval=0.03, retries=2)
    assert loop.time() - t0 >= 3 * 0.03 - EPS
    assert client.sent == 3


@pytest.mark.asyncio
async def test_duplicate_replies_are_ignored(udp):
    server, client = await udp(duplicate=True)
    assert await client.request(b"dup", retries=50) == b"DUP"

    async def until_duplicate():
        while client.duplicates < 1:
            await asyncio.sleep(0.005)

    await asyncio.wait_for(until_duplicate(), 20)
    assert await client.request(b"next", retries=50) == b"NEXT"


@pytest.mark.asyncio
async def test_concurrent_requests_are_matched_by_id(udp):
    server, client = await udp()
    payloads = [f"msg-{i}".encode() for i in range(20)]
    replies = await asyncio.wait_for(
        asyncio.gather(*(client.request(p, retries=50) for p in payloads)), 20)
    assert replies == [p.upper() for p in payloads]


@pytest.mark.asyncio
async def test_two_clients_get_their_own_replies(udp):
    server, first = await udp(upper=False)
    second = await UdpClient.connect(server.transport.get_extra_info("sockname"))
    try:
        a, b = await asyncio.gather(first.request(b"from-a", retries=50),
                                    second.request(b"from-b", retries=50))
        assert (a, b) == (b"from-a", b"from-b")
    finally:
        second.close()


@pytest.mark.asyncio
async def test_closed_client_transport(udp):
    server, client = await udp()
    client.close()
    assert client.transport.is_closing()
