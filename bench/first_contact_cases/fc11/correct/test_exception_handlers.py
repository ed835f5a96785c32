"""Error reporting hooks, as error-tracking integrations install them (Sentry's
asyncio integration, aiohttp's access to ``loop.call_exception_handler``, a
service that counts unhandled errors): ``set_exception_handler``,
``call_exception_handler``, ``default_exception_handler``, errors raised in done
callbacks, and futures/tasks whose exception was never retrieved.
"""
import asyncio
import contextlib
import gc
import logging

import pytest

pytestmark = pytest.mark.asyncio


class ErrorReporter:
    def __init__(self):
        self.reports = []

    def __call__(self, loop, context):
        self.reports.append(context)

    def messages(self):
        return [c.get("message", "") for c in self.reports]


@contextlib.contextmanager
def reporting():
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    reporter = ErrorReporter()
    loop.set_exception_handler(reporter)
    try:
        yield reporter
    finally:
        loop.set_exception_handler(previous)


async def test_call_exception_handler_reaches_custom_handler():
    loop = asyncio.get_running_loop()
    before = loop.get_exception_handler()
    with reporting() as rep:
        assert loop.get_exception_handler() is rep
        loop.call_exception_handler({"message": "backend flapping", "backend": "db-2"})
    assert loop.get_exception_handler() is before
    assert rep.reports == [{"message": "backend flapping", "backend": "db-2"}]


async def test_error_in_done_callback_is_reported():
    loop = asyncio.get_running_loop()
    with reporting() as rep:
        fut = loop.create_future()
        after = loop.create_future()

        def broken_metrics_hook(f):
            raise ZeroDivisionError("rate with zero window")

        fut.add_done_callback(broken_metrics_hook)
        fut.set_result("ok")
        # Scheduled after the done callback: call_soon is FIFO.
        loop.call_soon(after.set_result, None)
        await after
    assert len(rep.reports) == 1
    ctx = rep.reports[0]
    assert isinstance(ctx["exception"], ZeroDivisionError)
    assert isinstance(ctx["handle"], asyncio.Handle)
    assert "Exception in callback" in ctx["message"]
    assert fut.result() == "ok"


async def test_default_handler_logs_to_asyncio_logger(caplog):
    loop = asyncio.get_running_loop()
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        loop.default_exception_handler(
            {"message": "worker crashed", "exception": RuntimeError("disk full")}
        )
    ours = [r for r in caplog.records if r.name == "asyncio" and "worker crashed" in r.getMessage()]
    assert len(ours) == 1
    assert ours[0].exc_info[0] is RuntimeError


async def test_unretrieved_future_exception_reported_on_gc():
    loop = asyncio.get_running_loop()

    def orphan():
        f = loop.create_future()
        f.set_exception(TimeoutError("upstream slow"))

    with reporting() as rep:
        orphan()
        gc.collect()
    msgs = rep.messages()
    assert any("exception was never retrieved" in m for m in msgs), msgs
    ctx = [c for c in rep.reports if "never retrieved" in c["message"]][0]
    assert isinstance(ctx["exception"], TimeoutError)


async def test_unretrieved_task_exception_reported_but_retrieved_is_not():
    async def job(name):
        await asyncio.sleep(0)
        raise KeyError(name)

    async def fire_and_forget():
        t = asyncio.create_task(job("forgotten"))
        await asyncio.wait([t])

    async def awaited():
        t = asyncio.create_task(job("handled"))
        with pytest.raises(KeyError):
            await t

    with reporting() as rep:
        await fire_and_forget()
        await awaited()
        gc.collect()
    task_reports = [c for c in rep.reports if c["message"].startswith("Task exception")]
    assert len(task_reports) == 1
    assert task_reports[0]["exception"].args == ("forgotten",)
