"""One service for the whole session (port 0), a shared client pool, a client factory, a
hook fixture, and a fixture for tests that need a service of their own."""
import asyncio

import pytest
import pytest_asyncio

from app.client import Client, ConnectionPool
from app.config import load_settings
from app.service import Service
from app.store import FileStore, MemoryStore


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def service():
    settings = load_settings({"APP_ENV": "test", "APP_WORKERS": "3", "APP_RETRY_BACKOFF": "0.02",
                             "APP_SHUTDOWN_GRACE": "1.0"})
    svc = await Service(settings, MemoryStore()).start()
    yield svc
    await svc.stop()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def shared_pool(service):
    pool = ConnectionPool("127.0.0.1", service.port, max_size=8)
    yield pool
    await pool.close()


@pytest.fixture
def client(shared_pool, request):
    return Client(shared_pool, {"x-test": request.node.name[:40]})


@pytest_asyncio.fixture(loop_scope="session")
async def make_client(service):
    pools = []

    def make(max_size=4, port=None):
        pool = ConnectionPool("127.0.0.1", port or service.port, max_size=max_size)
        pools.append(pool)
        return Client(pool)

    yield make
    for pool in pools:
        await pool.close()


@pytest.fixture
def request_started(service):
    """Install a hook that records request paths as they start; removed afterwards."""
    started = asyncio.Queue()
    service.server.request_started = lambda req: started.put_nowait(req.path)
    yield started
    service.server.request_started = None


@pytest_asyncio.fixture(loop_scope="session")
async def own_service(tmp_path):
    """Start services of this test's own (file-backed); stop whatever is still running."""
    services = []

    async def start(grace=5.0, path=None):
        settings = load_settings({"APP_SHUTDOWN_GRACE": str(grace)})
        store = await FileStore(path or tmp_path / "svc.log").open()
        svc = await Service(settings, store).start()
        services.append(svc)
        return svc

    yield start
    for svc in services:
        if not svc.server.stopping:
            await svc.stop()
