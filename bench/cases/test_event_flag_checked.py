"""An event set after the flag was checked: the handler tests `warmed.is_set()` instead of waiting.

The cache warmer sets `warmed` when it is done; a request arriving after 1 ms looks at the flag
once and, if it is not set yet, takes the slow path and records a miss.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "order_violation", "resource": "Event@"}


class Service:
    def __init__(self) -> None:
        self.warmed = asyncio.Event()
        self.misses = 0

    async def warm(self) -> None:
        await asyncio.sleep(random.uniform(0, 0.002))  # preload the hot keys
        self.warmed.set()

    async def handle(self) -> str:
        await asyncio.sleep(0.001)  # the first request arrives a moment after startup
        if not self.warmed.is_set():
            self.misses += 1
            return "slow path"
        return "cached"


@pytest.mark.asyncio
async def test_first_request_is_cached() -> None:
    service = Service()
    _, answer = await asyncio.gather(service.warm(), service.handle())
    assert answer == "cached"
    assert service.misses == 0
