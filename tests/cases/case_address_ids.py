"""Input for tests/test_cannot_lie.py: a test parametrized with an object whose id is its repr, a
memory address that is another in every process (hikari's Mock parameters). Plain pytest passes it."""

import asyncio

import pytest


@pytest.mark.asyncio
@pytest.mark.parametrize("thing", [object()], ids=repr)
async def test_with_an_address(thing: object) -> None:
    await asyncio.sleep(0)
