"""A tracing task factory, as instrumentation libraries install it (aiomonitor,
OpenTelemetry asyncio instrumentation, Sentry's asyncio integration).

``Tracer.factory`` is installed with ``loop.set_task_factory``. Every task it creates
is a ``TracedTask`` (an ``asyncio.Task`` subclass) carrying a trace id, gets an
automatic name when the caller gave none, and reports its end to the tracer.
``TracedTask.cancel`` records why a task was cancelled.
"""
import asyncio
import contextlib
import contextvars
import itertools

import pytest

tenant = contextvars.ContextVar("tenant", default="none")


class TracedTask(asyncio.Task):
    def __init__(self, coro, *, loop=None, trace_id=None, **kwargs):
        super().__init__(coro, loop=loop, **kwargs)
        self.trace_id = trace_id
        self.cancel_reasons = []

    def cancel(self, msg=None):
        self.cancel_reasons.append(msg)
        return super().cancel(msg)


class Tracer:
    def __init__(self):
        self._ids = itertools.count(1)
        self.created = []
        self.finished = []

    def factory(self, loop, coro, **kwargs):
        # Python 3.11 passes context= only when the caller gave one; newer
        # versions may also pass name=.
        trace_id = next(self._ids)
        task = TracedTask(coro, loop=loop, trace_id=trace_id, **kwargs)
        if "name" not in kwargs:
            task.set_name(f"{coro.__qualname__}#{trace_id}")
        self.created.append(trace_id)
        task.add_done_callback(lambda t: self.finished.append(t.trace_id))
        return task


@contextlib.contextmanager
def installed(factory):
    loop = asyncio.get_running_loop()
    previous = loop.get_task_factory()
    loop.set_task_factory(factory)
    try:
        yield
    finally:
        loop.set_task_factory(previous)


async def fetch(n):
    await asyncio.sleep(0)
    return n * 10


@pytest.mark.asyncio
async def test_tasks_are_traced_subclass_instances():
    tracer = Tracer()
    with installed(tracer.factory):
        tasks = [asyncio.create_task(fetch(i)) for i in range(3)]
        results = await asyncio.gather(*tasks)
    assert results == [0, 10, 20]
    assert all(isinstance(t, TracedTask) for t in tasks)
    assert [t.trace_id for t in tasks] == [1, 2, 3]
    assert [t.get_name() for t in tasks] == ["fetch#1", "fetch#2", "fetch#3"]
    # Each task's own done callback was registered before gather's, so by the
    # time gather's result reaches us every finish has been recorded.
    assert sorted(tracer.finished) == [1, 2, 3]


@pytest.mark.asyncio
async def test_get_task_factory_and_restore():
    loop = asyncio.get_running_loop()
    before = loop.get_task_factory()
    tracer = Tracer()
    factory = tracer.factory
    with installed(factory):
        assert loop.get_task_factory() is factory
        t = asyncio.create_task(fetch(1), name="explicit")
        assert await t == 10
        assert t.get_name() == "explicit"
    assert loop.get_task_factory() is before
    plain = asyncio.create_task(fetch(2))
    assert not isinstance(plain, TracedTask)
    assert await plain == 20


@pytest.mark.asyncio
async def test_context_passes_through_factory():
    async def whoami():
        return tenant.get()

    ctx = contextvars.copy_context()
    ctx.run(tenant.set, "acme")
    tracer = Tracer()
    with installed(tracer.factory):
        in_ctx = asyncio.create_task(whoami(), context=ctx)
        default = asyncio.create_task(whoami())
        assert await in_ctx == "acme"
        assert await default == "none"
    assert isinstance(in_ctx, TracedTask)
    assert tenant.get() == "none"


@pytest.mark.asyncio
async def test_gather_and_ensure_future_go_through_factory():
    tracer = Tracer()
    with installed(tracer.factory):
        fut = asyncio.ensure_future(fetch(4))
        results = await asyncio.gather(fetch(5), fetch(6))
        assert await fut == 40
    assert results == [50, 60]
    assert isinstance(fut, TracedTask)
    assert len(tracer.created) == 3


@pytest.mark.asyncio
async def test_cancel_override_sees_reasons():
    tracer = Tracer()
    started = asyncio.Event()

    async def hang():
        started.set()
        await asyncio.Event().wait()

    with installed(tracer.factory):
        direct = asyncio.create_task(hang())
        await asyncio.wait_for(started.wait(), 10)
        started.clear()
        via_gather = asyncio.create_task(hang())
        await asyncio.wait_for(started.wait(), 10)
        outer = asyncio.gather(via_gather)
        direct.cancel("shutdown")
        outer.cancel("deploy")
        with pytest.raises(asyncio.CancelledError):
            await direct
        with pytest.raises(asyncio.CancelledError):
            await outer
    assert direct.cancel_reasons == ["shutdown"]
    assert via_gather.cancel_reasons == ["deploy"]
    assert via_gather.cancelled()
