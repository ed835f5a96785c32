"""Input for tests/test_cannot_lie.py: tests under a policy their project set whose loops are
asyncio's own (conftest.py). Plain pytest passes both."""

import asyncio

import pytest


@pytest.mark.asyncio
async def test_the_projects_policy_is_in_force() -> None:
    await asyncio.sleep(0)
    assert type(asyncio.get_event_loop_policy()).__name__ == "ClosingPolicy"
    assert asyncio.get_running_loop().made_by == "ClosingPolicy"  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_locked_deposits_add_up() -> None:
    balance = {"amount": 0}
    lock = asyncio.Lock()

    async def deposit(amount: int) -> None:
        async with lock:
            seen = balance["amount"]
            await asyncio.sleep(0.001)
            balance["amount"] = seen + amount

    await asyncio.gather(deposit(10), deposit(20))
    assert balance["amount"] == 30
