"""The seed's multi-resource shape: a handler reads two dicts, awaits, and writes both back. Fifty
concurrent requests should leave 50 sessions and 500 counters; they leave one and ten."""

import asyncio

import pytest


class MultiResourceServer:
    def __init__(self) -> None:
        self.sessions: dict = {}
        self.counters: dict = {}

    async def handle_request(self, client_id: str) -> None:
        curr_sess = self.sessions.get(client_id, 0)
        curr_count = self.counters.get(client_id, 0)
        await asyncio.sleep(0.0001)
        self.sessions[client_id] = curr_sess + 1
        self.counters[client_id] = curr_count + 10


@pytest.mark.asyncio
async def test_fifty_requests() -> None:
    server = MultiResourceServer()
    await asyncio.gather(*(server.handle_request("audit") for _ in range(50)))
    assert server.sessions["audit"] == 50
    assert server.counters["audit"] == 500
