"""Suite-wide configuration: markers, loop scopes for integration tests, state resets, env,
log level, fake clock and a parametrized store fixture."""
import itertools
import logging
import os

import pytest
import pytest_asyncio
from pytest_asyncio import is_async_test

from app import metrics
from app.store import FileStore, MemoryStore


def pytest_configure(config):
    config.addinivalue_line("markers", "integration: talks to the shared session service over TCP")
    config.addinivalue_line("markers", "unit: component test without the shared service")
    config.addinivalue_line("markers", "slow: takes more than about 0.3 s")
    config.addinivalue_line("markers", "own_loop: integration test that keeps a function-scoped loop")


def pytest_collection_modifyitems(config, items):
    session_loop = pytest.mark.asyncio(loop_scope="session")
    for item in items:
        if f"{os.sep}integration{os.sep}" in str(item.path):
            item.add_marker(pytest.mark.integration)
            if is_async_test(item) and item.get_closest_marker("own_loop") is None:
                item.add_marker(session_loop, append=False)
        else:
            item.add_marker(pytest.mark.unit)


@pytest.fixture(autouse=True)
def _reset_module_state():
    metrics.reset()
    yield
    metrics.reset()


@pytest.fixture(autouse=True)
def _app_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith("APP_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("APP_ENV", "test")


@pytest.fixture(autouse=True)
def _app_log_level(caplog):
    caplog.set_level(logging.DEBUG, logger="app")


class FakeClock:
    def __init__(self, start=1000.0):
        self.now = start

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


@pytest.fixture
def fake_clock():
    return FakeClock()


_ns = itertools.count(1)


@pytest.fixture
def ns(request):
    """A namespace unique to this test, for keys and topics on shared services."""
    return f"{request.node.name.split('[')[0].replace('_', '')[:20]}{next(_ns)}"


@pytest_asyncio.fixture(params=["memory", "file"])
async def store(request, tmp_path):
    if request.param == "memory":
        s = MemoryStore()
    else:
        s = await FileStore(tmp_path / "kv.log").open()
    yield s
    await s.close()
