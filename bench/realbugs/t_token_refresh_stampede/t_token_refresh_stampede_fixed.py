"""A recipe-service API client that refreshes its OAuth2 token with the refresh serialised and re-checked.

Paraphrased from miaucl/cookidoo-api (see README.md): every request first makes sure the access
token is fresh; the fix takes a lock around the refresh and checks the expiry again inside it.
"""

import asyncio
import random
import time

TOKEN_EXPIRY_MARGIN_S = 60.0


class InvalidGrant(Exception):
    """The token endpoint rejected a refresh token that it had already rotated."""


class FakeTokenEndpoint:
    """The identity provider: a refresh token works once, then it is retired (rotation)."""

    def __init__(self) -> None:
        self.calls = 0
        self._generation = 0
        self._valid_refresh = "r0"

    async def refresh(self, refresh_token: str) -> dict:
        self.calls += 1
        await asyncio.sleep(random.uniform(0.0003, 0.0015))  # the round trip to the provider
        if refresh_token != self._valid_refresh:
            raise InvalidGrant(f"refresh token {refresh_token} was already used")
        self._generation += 1
        self._valid_refresh = f"r{self._generation}"
        return {"access_token": f"a{self._generation}", "refresh_token": self._valid_refresh, "expires_in": 600}


class RecipeClient:
    def __init__(self, endpoint: FakeTokenEndpoint, *, expires_at: float) -> None:
        self._endpoint = endpoint
        self._access_token = "a0"
        self._refresh_token = "r0"
        self._expires_at = expires_at
        self._logged_in = True
        self._refresh_lock = asyncio.Lock()

    def _is_token_expiring(self) -> bool:
        return time.time() >= self._expires_at - TOKEN_EXPIRY_MARGIN_S

    def _apply_tokens(self, data: dict) -> None:
        self._access_token = data["access_token"]
        self._refresh_token = data["refresh_token"]
        self._expires_at = time.time() + data["expires_in"]

    async def refresh(self) -> None:
        data = await self._endpoint.refresh(self._refresh_token)
        self._apply_tokens(data)

    async def _ensure_token(self) -> None:
        if not self._logged_in:
            return
        if not self._is_token_expiring():
            return
        # One refresh at a time, and a request that waited here re-checks: the refresh it waited
        # for has usually made the token fresh already.
        async with self._refresh_lock:
            if self._is_token_expiring():
                await self.refresh()

    async def get_recipe(self, recipe_id: int) -> dict:
        await asyncio.sleep(random.uniform(0, 0.025))  # the request is built and queued
        await self._ensure_token()
        await asyncio.sleep(random.uniform(0, 0.001))  # the API call itself
        return {"id": recipe_id, "token": self._access_token}
