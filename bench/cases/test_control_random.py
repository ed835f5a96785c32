"""Control (random, not a race): one run in ten fails because random.random() says so; nothing is concurrent.

There is a single task and no shared state between tasks: the outcome is decided by the value the
program draws, not by any schedule. Whatever the engine reports, it must not name a race.

What affidavit says (recorded after running it): "reproduced" -- a schedule's seed also seeds
`random`, so the failing seed replays 10/10 -- with cause "other" and the evidence "no single
delay makes it fail: the values the program draws from `random` decide it". No race is named,
which is the point; "other" is the expected cause, not a concurrency kind.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "other"}


async def flaky_service() -> str:
    await asyncio.sleep(0.0005)
    if random.random() < 0.1:
        return "503 Service Unavailable"
    return "200 OK"


@pytest.mark.asyncio
async def test_service_answers() -> None:
    status = await flaky_service()
    assert status == "200 OK"
