"""Order violation: the test reads the settings before the background loader has written them.

The loader usually finishes in about a millisecond; the test waits 2 ms "to be safe" and reads.
"""

import asyncio
import random

import pytest

EXPECTED = {"verdict": "reproduced", "cause": "order_violation", "resource": "SETTINGS"}

SETTINGS: dict = {}


async def load_settings() -> None:
    await asyncio.sleep(random.uniform(0.0005, 0.003))  # parsing the file takes a variable time
    SETTINGS["mode"] = "production"


@pytest.mark.asyncio
async def test_settings_are_loaded() -> None:
    SETTINGS.clear()
    loader = asyncio.create_task(load_settings())
    await asyncio.sleep(0.002)  # "loading takes 1 ms; 2 ms is plenty"
    mode = SETTINGS.get("mode")
    await loader
    assert mode == "production"
