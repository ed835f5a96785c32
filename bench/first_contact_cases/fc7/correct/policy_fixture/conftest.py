import asyncio

import pytest


class CountingPolicy(asyncio.DefaultEventLoopPolicy):
    def __init__(self):
        super().__init__()
        self.loops = []

    def new_event_loop(self):
        loop = super().new_event_loop()
        loop.slow_callback_duration = 5.0
        self.loops.append(loop)
        return loop


_POLICY = CountingPolicy()


@pytest.fixture(scope="session")
def event_loop_policy():
    return _POLICY


@pytest.fixture
def counting_policy():
    return _POLICY
