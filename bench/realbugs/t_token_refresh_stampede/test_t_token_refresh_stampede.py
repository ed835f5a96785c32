"""Requests that cross the token's expiry together refresh it once and all succeed."""

import asyncio
import importlib
import time

import pytest

EXPECTED = {
    "cause": "check_then_act",
    "resource": ["._expires_at", "._refresh_token"],
    "await": "t_token_refresh_stampede_buggy.py:60",
    "fix": "RECHECK",
    "tags": ["check_then_act_across_functions", "stampede"],
}


@pytest.fixture(params=["buggy", "fixed"])
def lib(request):
    return importlib.import_module(f"t_token_refresh_stampede_{request.param}")


@pytest.mark.asyncio
async def test_concurrent_requests_refresh_once(lib):
    endpoint = lib.FakeTokenEndpoint()
    client = lib.RecipeClient(endpoint, expires_at=time.time() - 1)  # the token has just expired
    recipes = await asyncio.gather(*(client.get_recipe(i) for i in range(3)))
    assert [r["id"] for r in recipes] == [0, 1, 2]
    assert endpoint.calls == 1
