"""Request-scoped context tests, modelled on the ``contextvars`` plumbing of web
frameworks and structured loggers (request id, current user, tracing span).

Checks that each task gets a copy of the context at creation, that values set
inside a child task do not leak into the parent or siblings, that
``loop.call_soon(..., context=...)`` and ``asyncio.to_thread`` see the right
values, and that a logging filter stamps records with the request id (verified
with ``caplog``).
"""

import asyncio
import contextvars
import logging

import pytest

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")
span_stack: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("span_stack", default=())


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id.get()
        return True


logger = logging.getLogger("fc8.web")
logger.addFilter(RequestIdFilter())


async def handle_request(rid: str, delay: float) -> tuple[str, str]:
    request_id.set(rid)
    logger.info("start")
    await asyncio.sleep(delay)
    logger.info("end")
    return rid, request_id.get()


@pytest.mark.asyncio
async def test_concurrent_requests_keep_their_own_id(caplog):
    caplog.set_level(logging.INFO, logger="fc8.web")
    results = await asyncio.gather(
        *(asyncio.create_task(handle_request(f"r{i}", 0.001 * (5 - i))) for i in range(5))
    )
    assert all(rid == seen for rid, seen in results)
    by_id: dict[str, list[str]] = {}
    for rec in caplog.records:
        by_id.setdefault(rec.request_id, []).append(rec.getMessage())
    assert by_id == {f"r{i}": ["start", "end"] for i in range(5)}
    # The test's own context was never touched.
    assert request_id.get() == "none"


@pytest.mark.asyncio
async def test_child_changes_do_not_leak_to_parent():
    request_id.set("parent")

    async def child():
        assert request_id.get() == "parent"  # inherited copy
        request_id.set("child")
        await asyncio.sleep(0)
        return request_id.get()

    assert await asyncio.create_task(child()) == "child"
    assert request_id.get() == "parent"


@pytest.mark.asyncio
async def test_call_soon_with_explicit_context():
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    ctx.run(request_id.set, "from-ctx")
    fut = loop.create_future()
    loop.call_soon(lambda: fut.set_result(request_id.get()), context=ctx)
    assert await asyncio.wait_for(fut, timeout=10) == "from-ctx"
    assert request_id.get() == "none"


@pytest.mark.asyncio
async def test_to_thread_and_taskgroup_inherit_context():
    request_id.set("tg-parent")
    seen = []

    async def sub(i):
        seen.append((i, request_id.get(), await asyncio.to_thread(request_id.get)))

    async with asyncio.TaskGroup() as tg:
        for i in range(3):
            tg.create_task(sub(i))
    assert sorted(seen) == [(i, "tg-parent", "tg-parent") for i in range(3)]
