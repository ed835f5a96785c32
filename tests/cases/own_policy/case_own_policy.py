"""Input for tests/test_cannot_lie.py: tests that run on the loop their project chose (conftest.py).

Plain pytest passes them: the loop is MyLoop, made by the policy the conftest set. A tool that
cannot run them on that loop must say so, not run them on another loop and call them failing.
"""

import asyncio

import pytest


@pytest.mark.asyncio
async def test_runs_on_the_projects_loop() -> None:
    await asyncio.sleep(0)
    assert type(asyncio.get_running_loop()).__name__ == "MyLoop"


def test_asyncio_run_uses_the_projects_loop() -> None:
    async def loop_name() -> str:
        await asyncio.sleep(0)
        return type(asyncio.get_running_loop()).__name__

    assert asyncio.run(loop_name()) == "MyLoop"
