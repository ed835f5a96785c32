"""The conftest of the version-matrix project (tests/test_plugin_matrix.py): a suite's own
`event_loop` fixture, as suites written for pytest-asyncio 0.21-0.25 define it (1.x ignores it)."""

import asyncio

import pytest


@pytest.fixture
def event_loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()
