"""A fixture's background refresher rotates the token while the test is using it.

The `session` fixture starts a task that rotates the auth token every few milliseconds. The test
reads the token, awaits the request, and the server checks the token it was given against the
current one: when the rotation lands in between, the request is refused.
"""

import asyncio
import contextlib
import random

import pytest
import pytest_asyncio

EXPECTED = {"verdict": "reproduced", "cause": "order_violation", "resource": '["token"]'}


@pytest_asyncio.fixture
async def session():
    state = {"token": "t0", "generation": 0}

    async def refresher() -> None:
        while True:
            await asyncio.sleep(random.uniform(0, 0.004))  # the identity provider's schedule
            state["generation"] += 1
            state["token"] = f"t{state['generation']}"

    task = asyncio.create_task(refresher())
    yield state
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def call_api(state: dict, token: str) -> str:
    await asyncio.sleep(0.001)  # the request travels to the server
    if token != state["token"]:
        raise PermissionError(f"token {token} expired")
    return "ok"


@pytest.mark.asyncio
async def test_api_call(session) -> None:
    token = session["token"]
    assert await call_api(session, token) == "ok"
