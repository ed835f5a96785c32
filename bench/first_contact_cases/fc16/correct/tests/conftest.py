import asyncio
import threading
import time

import pytest
import pytest_asyncio

from relay import BlockingPool, Driver


def _relay_threads():
    return {t for t in threading.enumerate() if t.name.startswith("relay-")}


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Fail a test that leaves one of its own relay-* threads running."""
    before = _relay_threads()
    yield
    deadline = time.monotonic() + 5.0
    while True:
        leaked = [t.name for t in _relay_threads() - before if t.is_alive()]
        if not leaked or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert not leaked, f"threads left running: {leaked}"


@pytest_asyncio.fixture
async def loop_errors():
    """Everything reported to the running loop's exception handler."""
    loop = asyncio.get_running_loop()
    errors = []
    old = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, ctx: errors.append(ctx))
    yield errors
    for _ in range(3):
        await asyncio.sleep(0)
    loop.set_exception_handler(old)
    assert not errors, errors


@pytest_asyncio.fixture
async def driver():
    async with Driver() as d:
        yield d


@pytest_asyncio.fixture
async def pool():
    p = BlockingPool(workers=3)
    yield p
    await p.aclose()


@pytest.fixture
def anyio_backend():
    return "asyncio"
