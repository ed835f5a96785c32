"""A thermostat cloud API client for a Home Assistant integration, with the token refresh serialised.

Paraphrased from exabird/ha-tado-x (see README.md): every API call goes through
`_ensure_valid_token()`; the fix serialises the refresh with a lock and
re-checks the expiry inside it.
"""

import asyncio
import random
import time


class AuthError(Exception):
    pass


class FakeCloud:
    """The vendor's cloud: token endpoint with rotating refresh tokens, and the rooms."""

    def __init__(self) -> None:
        self.rooms = {"living": "heat", "bedroom": "heat"}
        self.token_calls = 0
        self._valid_refresh = "r0"
        self._generation = 0

    async def post_token(self, refresh_token: str) -> tuple:
        self.token_calls += 1
        await asyncio.sleep(random.uniform(0.0003, 0.0015))
        if refresh_token != self._valid_refresh:
            return 400, {"error": "invalid_grant", "error_reason": "refresh_token_not_found"}
        self._generation += 1
        self._valid_refresh = f"r{self._generation}"
        return 200, {"access_token": f"a{self._generation}", "refresh_token": self._valid_refresh, "expires_in": 600}

    async def request(self, method: str, path: str, token: str, body=None) -> dict:
        await asyncio.sleep(random.uniform(0, 0.0008))
        if method == "PUT":
            self.rooms[path] = body
        return dict(self.rooms)


class TadoXApi:
    def __init__(self, cloud: FakeCloud, *, token_expiry: float) -> None:
        self._cloud = cloud
        self._access_token = "a0"
        self._refresh_token = "r0"
        self._token_expiry = token_expiry
        self._token_lock = asyncio.Lock()

    async def refresh_access_token(self) -> None:
        status, data = await self._cloud.post_token(self._refresh_token)
        if status != 200:
            raise AuthError(f"Failed to refresh token: {status} - {data}")
        self._access_token = data["access_token"]
        self._refresh_token = data["refresh_token"]
        self._token_expiry = time.time() + data["expires_in"]

    async def _ensure_valid_token(self) -> None:
        if not self._access_token:
            raise AuthError("Not authenticated")
        # Refresh when the token expires in less than 60 seconds, one refresh at a time; a call
        # that waited for another's refresh checks again and finds the token fresh.
        if self._token_expiry and time.time() >= self._token_expiry - 60:
            async with self._token_lock:
                if self._token_expiry and time.time() >= self._token_expiry - 60:
                    await self.refresh_access_token()

    async def _request(self, method: str, path: str, body=None) -> dict:
        await self._ensure_valid_token()
        return await self._cloud.request(method, path, self._access_token, body)

    async def get_rooms(self) -> dict:
        return await self._request("GET", "rooms")

    async def set_room_off(self, room: str) -> dict:
        return await self._request("PUT", room, "off")


class Coordinator:
    def __init__(self, api: TadoXApi) -> None:
        self.api = api
        self.data: dict = {}

    async def async_refresh(self) -> None:
        self.data = await self.api.get_rooms()


class RoomSwitch:
    def __init__(self, coordinator: Coordinator, room: str) -> None:
        self.coordinator = coordinator
        self.room = room

    async def async_turn_off(self) -> None:
        await self.coordinator.api.set_room_off(self.room)
        await self.coordinator.async_refresh()
