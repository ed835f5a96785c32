"""Async fixtures with scopes and loop scopes, in the style of a web app test
suite (an in-process service started once per module on a module-scoped loop,
a per-test client, sync fixtures with request.addfinalizer). All tests here run
on the module's loop (``pytestmark`` with ``loop_scope="module"``). Each test
checks only its own effects, so any subset of them can run in any order.
"""
import asyncio

import pytest
import pytest_asyncio

pytestmark = pytest.mark.asyncio(loop_scope="module")


class EchoService:
    """A background task answering requests from an in-memory inbox."""

    def __init__(self):
        self.inbox = asyncio.Queue()
        self.loop = asyncio.get_running_loop()
        self.task = asyncio.create_task(self._serve(), name="echo-service")
        self.handled = 0

    async def _serve(self):
        while True:
            payload, reply = await self.inbox.get()
            await asyncio.sleep(0.001)
            self.handled += 1
            if not reply.cancelled():
                reply.set_result(payload.upper())

    async def call(self, payload):
        reply = asyncio.get_running_loop().create_future()
        await self.inbox.put((payload, reply))
        return await asyncio.wait_for(reply, 10)

    async def stop(self):
        self.task.cancel()
        try:
            await self.task
        except asyncio.CancelledError:
            pass


TEARDOWN_LOG = []


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service():
    svc = EchoService()
    yield svc
    await svc.stop()
    assert svc.task.cancelled()


@pytest_asyncio.fixture(loop_scope="module")
async def client(service, request):
    calls = []

    async def call(payload):
        calls.append(payload)
        return await service.call(payload)

    yield call
    # async teardown of a function-scoped fixture
    await asyncio.sleep(0)
    TEARDOWN_LOG.append((request.node.name, tuple(calls)))


@pytest.fixture
def audit(request):
    entries = []

    def check():
        # runs after the test, from request.addfinalizer
        assert all(isinstance(e, str) for e in entries)
        TEARDOWN_LOG.append(("audit", request.node.name, len(entries)))

    request.addfinalizer(check)
    return entries


async def test_service_runs_on_this_tests_loop(service, client):
    assert service.loop is asyncio.get_running_loop()
    assert not service.task.done()
    assert await client("ping") == "PING"


async def test_concurrent_calls_share_the_service(service, client):
    before = service.handled
    replies = await asyncio.gather(*(client(f"m{i}") for i in range(8)))
    assert replies == [f"M{i}" for i in range(8)]
    assert service.handled - before == 8


async def test_own_client_teardown_has_not_run_yet(client, request):
    # our own client teardown has not run yet: no entry with our name
    assert all(entry[0] != request.node.name for entry in TEARDOWN_LOG)
    assert await client("x") == "X"


async def test_addfinalizer_fixture_and_async_fixture_together(client, audit):
    audit.append(await client("audit-me"))
    assert audit == ["AUDIT-ME"]


async def test_cancelled_call_does_not_break_the_service(service, client):
    reply = asyncio.get_running_loop().create_future()
    reply.cancel()
    await service.inbox.put(("dropped", reply))     # service must skip it
    assert await client("after") == "AFTER"
