"""Structured-concurrency tests, modelled on a fan-out API aggregator (call
several backends, merge results) and on its error / cancellation handling.

Covers ``asyncio.TaskGroup`` (first failure cancels siblings, their cleanup
runs), ``as_completed`` over responses released in a known order,
``asyncio.wait(FIRST_COMPLETED)`` for hedged requests followed by
``gather(return_exceptions=True)`` over the losers, ``asyncio.shield``
protecting a commit from caller cancellation, and ``Task.cancel()`` with async
cleanup before the ``CancelledError`` is re-raised.
"""

import asyncio
import time

import pytest


async def backend(name: str, delay: float, fail: bool = False) -> str:
    await asyncio.sleep(delay)
    if fail:
        raise RuntimeError(f"{name} unavailable")
    return f"{name}:ok"


@pytest.mark.asyncio
async def test_taskgroup_failure_cancels_siblings_and_runs_cleanup():
    cleaned = []

    async def slow(name):
        try:
            await asyncio.sleep(60)
        finally:
            cleaned.append(name)

    start = time.monotonic()
    with pytest.raises(ExceptionGroup) as excinfo:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(slow("x"))
            tg.create_task(slow("y"))
            tg.create_task(backend("z", 0.01, fail=True))
    assert time.monotonic() - start < 10
    assert sorted(cleaned) == ["x", "y"]
    [err] = excinfo.value.exceptions
    assert isinstance(err, RuntimeError) and "z unavailable" in str(err)


@pytest.mark.asyncio
async def test_as_completed_yields_in_completion_order():
    # Responses are released by the test (as a fake transport would deliver
    # them), so the completion order does not depend on wall-clock timing.
    released = {name: asyncio.Event() for name in ("slow", "fast", "medium")}

    async def gated_backend(name):
        await released[name].wait()
        return f"{name}:ok"

    tasks = [asyncio.create_task(gated_backend(n)) for n in ("slow", "fast", "medium")]
    await asyncio.sleep(0)  # every backend is now waiting for its response
    for name in ("fast", "medium", "slow"):
        released[name].set()
    order = [await fut for fut in asyncio.as_completed(tasks, timeout=30)]
    assert order == ["fast:ok", "medium:ok", "slow:ok"]


@pytest.mark.asyncio
async def test_hedged_request_takes_first_and_cancels_rest():
    primary = asyncio.create_task(backend("primary", 30))
    hedge = asyncio.create_task(backend("hedge", 0.02))
    done, pending = await asyncio.wait({primary, hedge}, return_when=asyncio.FIRST_COMPLETED, timeout=20)
    assert done == {hedge}
    assert hedge.result() == "hedge:ok"
    for t in pending:
        t.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    assert primary.cancelled()


@pytest.mark.asyncio
async def test_shield_lets_commit_finish_when_caller_is_cancelled():
    committed = asyncio.Event()

    async def commit():
        await asyncio.sleep(0.05)
        committed.set()
        return "committed"

    inner = asyncio.ensure_future(commit())

    async def request_handler():
        return await asyncio.shield(inner)

    handler = asyncio.create_task(request_handler())
    await asyncio.sleep(0)  # let the handler start awaiting the shield
    handler.cancel()
    with pytest.raises(asyncio.CancelledError):
        await handler
    # The shielded work continues and completes.
    assert await asyncio.wait_for(inner, timeout=10) == "committed"
    assert committed.is_set()


@pytest.mark.asyncio
async def test_cancellation_is_propagated_after_cleanup():
    events = []

    async def worker():
        try:
            events.append("start")
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            events.append("cancelled")
            await asyncio.sleep(0.01)  # async cleanup (e.g. rollback)
            events.append("rolled back")
            raise

    t = asyncio.create_task(worker())
    await asyncio.sleep(0.01)
    t.cancel("shutdown")
    with pytest.raises(asyncio.CancelledError):
        await t
    assert events == ["start", "cancelled", "rolled back"]
    assert t.cancelled()
