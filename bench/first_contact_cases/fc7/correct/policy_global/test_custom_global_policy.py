"""conftest.py installs a DefaultEventLoopPolicy subclass globally; loops must come from it."""
import asyncio
import time

import pytest


@pytest.mark.asyncio
async def test_loop_created_by_custom_policy():
    loop = asyncio.get_running_loop()
    assert getattr(loop, "fc7_tag", None) == "tagging-policy"
    policy = asyncio.get_event_loop_policy()
    assert type(policy).__name__ == "TaggingPolicy"
    assert isinstance(policy, asyncio.DefaultEventLoopPolicy)


@pytest.mark.asyncio
async def test_each_test_gets_a_fresh_tagged_loop():
    assert type(asyncio.get_event_loop_policy()).created >= 1
    t0 = time.monotonic()
    await asyncio.sleep(0.02)
    assert time.monotonic() - t0 >= 0.019


def test_sync_asyncio_run_uses_policy_too():
    async def probe():
        return getattr(asyncio.get_running_loop(), "fc7_tag", None)

    assert asyncio.run(probe()) == "tagging-policy"
