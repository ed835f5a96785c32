"""A sync test that drives the stock loop through asyncio.get_event_loop(), as old suites do. It
runs first in its session (its file sorts first): a loop set to None before it would stop it."""

import asyncio


def test_get_event_loop_run_until_complete():
    assert asyncio.get_event_loop().run_until_complete(asyncio.sleep(0, result=5)) == 5
