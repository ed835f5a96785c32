"""asynccontextmanager / AsyncExitStack tests in the style of a web app's
lifespan and DB layer (Starlette lifespan, databases/encode transactions):
commit/rollback, LIFO teardown of several resources, ownership transfer with
pop_all(), teardown continuing after one resource fails, and a background
task started on enter and stopped on exit.
"""
import asyncio
import contextlib

import pytest


class Db:
    def __init__(self):
        self.log = []

    @contextlib.asynccontextmanager
    async def transaction(self):
        await asyncio.sleep(0)
        self.log.append("begin")
        try:
            yield self
        except BaseException:
            await asyncio.sleep(0)
            self.log.append("rollback")
            raise
        else:
            await asyncio.sleep(0)
            self.log.append("commit")


class Resource:
    def __init__(self, name, log, fail_on_close=False):
        self.name, self.log, self.fail = name, log, fail_on_close

    async def __aenter__(self):
        await asyncio.sleep(0)
        self.log.append(f"open {self.name}")
        return self

    async def __aexit__(self, *exc):
        await asyncio.sleep(0)
        self.log.append(f"close {self.name}")
        if self.fail:
            raise OSError(f"{self.name} close failed")
        return False


@pytest.mark.asyncio
async def test_transaction_commits_or_rolls_back():
    db = Db()
    async with db.transaction():
        pass
    with pytest.raises(KeyError):
        async with db.transaction():
            raise KeyError("row")
    assert db.log == ["begin", "commit", "begin", "rollback"]


@pytest.mark.asyncio
async def test_exit_stack_closes_in_reverse_order_with_callbacks():
    log = []

    async def flush_metrics(tag):
        await asyncio.sleep(0)
        log.append(f"flush {tag}")

    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(Resource("db", log))
        stack.push_async_callback(flush_metrics, "m1")
        await stack.enter_async_context(Resource("cache", log))
        log.append("serving")
    assert log == ["open db", "open cache", "serving",
                   "close cache", "flush m1", "close db"]


@pytest.mark.asyncio
async def test_pop_all_transfers_ownership():
    log = []

    async def open_pair():
        async with contextlib.AsyncExitStack() as stack:
            a = await stack.enter_async_context(Resource("a", log))
            b = await stack.enter_async_context(Resource("b", log))
            return (a, b), stack.pop_all()       # nothing closed here

    (a, b), owner = await open_pair()
    assert log == ["open a", "open b"]
    await owner.aclose()
    assert log == ["open a", "open b", "close b", "close a"]


@pytest.mark.asyncio
async def test_failing_close_does_not_skip_other_teardown():
    log = []
    with pytest.raises(OSError, match="b close failed"):
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(Resource("a", log))
            await stack.enter_async_context(Resource("b", log, fail_on_close=True))
            await stack.enter_async_context(Resource("c", log))
    assert log[-3:] == ["close c", "close b", "close a"]


@contextlib.asynccontextmanager
async def lifespan(app):
    ticks = asyncio.Event()

    async def heartbeat():
        while True:
            app["beats"] += 1
            ticks.set()
            await asyncio.sleep(0.01)

    task = asyncio.create_task(heartbeat())
    app["state"] = "started"
    try:
        yield ticks
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        app["state"] = "stopped"
        app["task_cancelled"] = task.cancelled()


@pytest.mark.asyncio
async def test_lifespan_background_task_is_stopped_on_exit():
    app = {"beats": 0}
    async with lifespan(app) as ticks:
        assert app["state"] == "started"
        await asyncio.wait_for(ticks.wait(), 10)
    assert app["state"] == "stopped" and app["task_cancelled"]
    beats = app["beats"]
    await asyncio.sleep(0.05)
    assert app["beats"] == beats >= 1
