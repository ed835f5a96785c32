"""A burst of concurrent hits against "3 per day" admits exactly three."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "lost_update",
    "resource": "MemoryStorage#0.events",
    "await": "t_window_expiry_cutoff_buggy.py:40",
    "fix": "LOCK_CALLER",
    "tags": ["check_then_act_across_functions"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"t_window_expiry_cutoff_{request.param}")


@pytest.mark.asyncio
async def test_burst_admits_exactly_the_limit(lib):
    storage = lib.MemoryStorage()
    limiter = lib.MovingWindowRateLimiter(storage)

    async def hit():
        await asyncio.sleep(random.uniform(0, 0.01))  # requests arrive over a few milliseconds
        return await limiter.hit(3, 86400, "client-7")

    results = await asyncio.gather(*(hit() for _ in range(10)))
    await storage.close()
    assert sum(results) == 3
