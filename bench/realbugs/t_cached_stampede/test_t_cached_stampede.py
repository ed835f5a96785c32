"""Concurrent first requests for one exchange rate compute it once and all see the same value."""

import asyncio
import importlib
import random

import pytest

EXPECTED = {
    "cause": "check_then_act",
    "resource": ["._store", "SimpleMemoryCache#"],
    "await": "t_cached_stampede_buggy.py:52",
    "fix": "SINGLE_FLIGHT",
    "tags": ["stampede", "check_then_act_across_functions"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"t_cached_stampede_{request.param}")


@pytest.mark.asyncio
async def test_rate_is_computed_once(lib):
    calls = []
    cache = lib.SimpleMemoryCache()

    @lib.cached(cache)
    async def exchange_rate(currency):
        calls.append(currency)
        await asyncio.sleep(random.uniform(0.0005, 0.0015))  # the upstream pricing service
        return random.randint(0, 1000)

    async def request():
        await asyncio.sleep(random.uniform(0, 0.03))  # requests arrive at different times
        return await exchange_rate("EUR")

    rates = await asyncio.gather(*(request() for _ in range(3)))
    assert len(set(rates)) == 1
    assert calls == ["EUR"]
