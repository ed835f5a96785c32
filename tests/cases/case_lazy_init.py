"""A lazily fetched token: users that ask before the first login finished all find no token and
each logs in; the service counts the logins."""

import asyncio
import random

import pytest


class Client:
    def __init__(self) -> None:
        self.token = None
        self.logins = 0

    async def _login(self) -> str:
        self.logins += 1
        await asyncio.sleep(random.uniform(0.0002, 0.001))  # the login round trip
        return f"t{self.logins}"

    async def get_token(self) -> str:
        if self.token is None:
            token = await self._login()
            self.token = token
        return self.token


async def user(client: Client) -> str:
    await asyncio.sleep(random.uniform(0, 0.002))  # the request arrives after some latency
    return await client.get_token()


@pytest.mark.asyncio
async def test_one_login() -> None:
    client = Client()
    await asyncio.gather(user(client), user(client), user(client))
    assert client.logins == 1
