"""Custom awaitables and Future subclasses, as RPC and driver libraries write them
(a progress-reporting Future like an upload handle, an awaitable request object
like aiohttp's ``_RequestContextManager``, ``types.coroutine`` helpers like the
old ``asyncio.sleep(0)`` implementation).
"""
import asyncio
import types

import pytest


class ProgressFuture(asyncio.Future):
    """A Future that also reports progress to listeners before it resolves."""

    def __init__(self, *, loop=None):
        super().__init__(loop=loop)
        self.progress = []

    def report(self, pct):
        if not self.done():
            self.progress.append(pct)


class Request:
    """An awaitable request: ``await Request(...)`` sends it and waits for the reply."""

    def __init__(self, transport, payload):
        self.transport = transport
        self.payload = payload

    def __await__(self):
        fut = self.transport.send(self.payload)
        reply = yield from fut.__await__()
        return reply.upper()


class LoopbackTransport:
    def __init__(self):
        self.sent = []

    def send(self, payload):
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self.sent.append(payload)
        loop.call_soon(fut.set_result, payload)
        return fut


@types.coroutine
def yield_now():
    """Give the other ready callbacks one turn (a bare yield)."""
    yield


@types.coroutine
def wait_future(fut):
    return (yield from fut)


@pytest.mark.asyncio
async def test_progress_future_subclass():
    loop = asyncio.get_running_loop()
    upload = ProgressFuture(loop=loop)
    seen = []
    upload.add_done_callback(seen.append)

    async def uploader():
        for pct in (25, 50, 100):
            upload.report(pct)
            await asyncio.sleep(0)
        upload.set_result("etag-1")

    task = asyncio.create_task(uploader())
    assert await upload == "etag-1"
    await task
    assert upload.progress == [25, 50, 100]
    assert asyncio.isfuture(upload)
    assert asyncio.ensure_future(upload) is upload
    # Done callbacks receive the subclass instance itself.
    await asyncio.sleep(0)
    assert seen == [upload]
    upload.report(110)
    assert upload.progress == [25, 50, 100]


@pytest.mark.asyncio
async def test_progress_future_cancel_and_exception():
    cancelled = ProgressFuture()
    assert cancelled.cancel("user aborted")
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    failed = ProgressFuture()
    failed.set_exception(ConnectionResetError("peer"))
    with pytest.raises(ConnectionResetError):
        await failed
    assert isinstance(failed.exception(), ConnectionResetError)


@pytest.mark.asyncio
async def test_custom_await_object():
    transport = LoopbackTransport()
    assert await Request(transport, "ping") == "PING"
    many = await asyncio.gather(Request(transport, "a"), Request(transport, "b"))
    assert many == ["A", "B"]
    wrapped = asyncio.ensure_future(Request(transport, "c"))
    assert isinstance(wrapped, asyncio.Task)
    assert await wrapped == "C"
    assert sorted(transport.sent) == ["a", "b", "c", "ping"]


@pytest.mark.asyncio
async def test_bare_yield_lets_earlier_scheduled_task_run():
    log = []

    async def other():
        log.append("other ran")

    t = asyncio.create_task(other())
    # The task's first step was scheduled before our reschedule: FIFO.
    await yield_now()
    assert log == ["other ran"]
    await t


@pytest.mark.asyncio
async def test_generator_based_coroutine_waits_on_future():
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    loop.call_later(0.05, fut.set_result, 7)
    coro = wait_future(fut)
    assert asyncio.iscoroutine(coro)
    assert await coro == 7


@pytest.mark.asyncio
async def test_wait_for_on_awaitable_times_out_not_early():
    class Never:
        def __await__(self):
            return asyncio.get_running_loop().create_future().__await__()

    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(Never(), 0.2)
    elapsed = loop.time() - start
    assert elapsed >= 0.19
    assert elapsed < 10
