"""Model of Authlib's httpx ``AsyncOAuth2Client`` refreshing an expired token
from several coroutines at once.

Report: https://github.com/authlib/authlib/issues/266
("HTTPX Async client causes concurrent token refreshes when multiple
coroutines are actively using client").

Paraphrase of the report: when several coroutines share one async OAuth2
client and the access token has expired, each request checks the expiry,
finds the token stale and starts its own refresh; nothing makes the other
coroutines wait for the refresh already in flight.  The reporter asked for the
token to be "locked" while it is being refreshed (a lock was added later).
With providers that rotate refresh tokens, the second refresh presents a
refresh token the server has already retired and gets ``invalid_grant``.

The model has an authorisation server that rotates refresh tokens and rejects
reused ones, and a client whose ``ensure_active_token`` checks the expiry and
refreshes without any lock.  Request ``a`` starts with an expired token at
t=0; a poller's request ``b`` starts at t=50 ms.  The refresh round trip takes
~5 ms, so normally ``b`` finds a fresh token.  If the refresh round trip takes
longer than 50 ms, ``b`` also refreshes with the old refresh token and fails.
"""

import asyncio

import pytest

EXPECTED = {"cause": "check_then_act", "resource": "AsyncOAuth2Client.token (refresh in flight)"}

TOKEN_ENDPOINT_LATENCY = 0.005
POLLER_START = 0.05


class InvalidGrant(Exception):
    pass


class AuthServer:
    def __init__(self) -> None:
        self._valid_refresh = {"refresh-0"}
        self._issued = 0
        self.refresh_requests = 0

    def handle_refresh(self, refresh_token: str, now: float) -> dict:
        self.refresh_requests += 1
        if refresh_token not in self._valid_refresh:
            raise InvalidGrant("invalid_grant: refresh token was already used")
        self._valid_refresh.discard(refresh_token)  # rotation
        self._issued += 1
        new_refresh = f"refresh-{self._issued}"
        self._valid_refresh.add(new_refresh)
        return {
            "access_token": f"access-{self._issued}",
            "refresh_token": new_refresh,
            "expires_at": now + 3600,
        }


class AsyncOAuth2Client:
    LEEWAY = 60

    def __init__(self, server: AuthServer, token: dict) -> None:
        self._server = server
        self.token = token

    async def _post_token_endpoint(self, refresh_token: str) -> dict:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(TOKEN_ENDPOINT_LATENCY)  # request reaches the server
        result = self._server.handle_refresh(refresh_token, loop.time())
        await asyncio.sleep(0)  # response body is read
        return result

    async def ensure_active_token(self) -> None:
        loop = asyncio.get_running_loop()
        if self.token["expires_at"] - self.LEEWAY <= loop.time():
            # BUG (as reported): no lock, no check for a refresh in flight.
            self.token = await self._post_token_endpoint(self.token["refresh_token"])

    async def get(self, url: str) -> tuple[str, str]:
        await self.ensure_active_token()
        await asyncio.sleep(0.001)  # the actual API call
        return url, self.token["access_token"]


@pytest.mark.asyncio
async def test_concurrent_requests_refresh_once():
    loop = asyncio.get_running_loop()
    server = AuthServer()
    client = AsyncOAuth2Client(
        server,
        {"access_token": "access-0", "refresh_token": "refresh-0", "expires_at": loop.time() - 1},
    )

    async def request():
        return await client.get("/accounts")

    async def poller():
        await asyncio.sleep(POLLER_START)
        return await client.get("/orders")

    a, b = await asyncio.wait_for(asyncio.gather(request(), poller()), timeout=10)
    assert a == ("/accounts", "access-1")
    assert b == ("/orders", "access-1")
    assert server.refresh_requests == 1
