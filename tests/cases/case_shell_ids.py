"""Input for tests/test_user_files.py: parametrized ids that a shell would run as code or split.

A lost update (two deposits read the balance, wait, and write back what they read): it fails only
under some schedules, so explore and investigate both print a replay command, and the failure
message carries the case's own value, so the output of a pasted command shows which case ran."""

import asyncio
import random

import pytest

IDS = ["$(touch PWNED)", "a b", "it's"]
BALANCE = {"amount": 0}


async def deposit(amount: int) -> None:
    await asyncio.sleep(random.uniform(0, 0.003))
    current = BALANCE["amount"]
    await asyncio.sleep(0.0005)
    BALANCE["amount"] = current + amount


@pytest.mark.asyncio
@pytest.mark.parametrize("value", IDS, ids=IDS)
async def test_deposits(value: str) -> None:
    BALANCE["amount"] = 0
    await asyncio.gather(deposit(10), deposit(20))
    assert BALANCE["amount"] == 30, f"lost an update in case {value!r}"
