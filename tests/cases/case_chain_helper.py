"""A check in a helper, the act in the caller after an await: two reservations both see the one
free slot through has_room(), both wait for the backend, both take it."""

import asyncio
import random
from typing import List

import pytest


SLOTS = {"free": 1}


def has_room() -> bool:
    return SLOTS["free"] > 0  # chain: check


async def backend() -> None:
    await asyncio.sleep(0.0005)  # chain: backend


async def reserve(name: str, taken: List[str]) -> None:
    await asyncio.sleep(random.uniform(0, 0.003))  # the request arrives after some network latency
    if has_room():  # chain: call
        await backend()  # chain: named
        SLOTS["free"] = SLOTS["free"] - 1  # chain: write
        taken.append(name)


@pytest.mark.asyncio
async def test_one_slot_one_owner() -> None:
    SLOTS["free"] = 1
    taken: List[str] = []
    await asyncio.gather(reserve("a", taken), reserve("b", taken))
    assert SLOTS["free"] >= 0, taken
