"""conftest.py overrides pytest-asyncio's event_loop_policy fixture with a subclass."""
import asyncio
import warnings

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.asyncio
async def test_running_loop_came_from_policy(counting_policy):
    loop = asyncio.get_running_loop()
    assert loop in counting_policy.loops
    assert loop.slow_callback_duration == 5.0


@pytest.mark.asyncio
async def test_tasks_and_sleeps_work_normally(counting_policy):
    results = await asyncio.gather(*(asyncio.sleep(0.01, result=i) for i in range(5)))
    assert results == list(range(5))
    assert asyncio.get_running_loop() is counting_policy.loops[-1]
