"""TaskGroup and ExceptionGroup handling in the style of a fan-out fetcher (a
crawler / API aggregator that calls several backends at once): results of a
clean group, sibling cancellation when one backend fails, a cleanup error that
joins the group, ``except*`` splitting, and cancelling the parent.
"""
import asyncio

import pytest


class BackendError(Exception):
    pass


class Backends:
    def __init__(self):
        self.log = []
        self.hang = asyncio.Event()      # never set: "a backend that hangs"
        self.entered = set()

    async def ok(self, name, value):
        await asyncio.sleep(0.01)
        self.log.append(("ok", name))
        return value

    async def fail(self, name):
        await asyncio.sleep(0.01)
        self.log.append(("fail", name))
        raise BackendError(name)

    async def slow(self, name, started):
        self.entered.add(name)
        started.set()
        try:
            await self.hang.wait()
        finally:
            self.log.append(("cancelled", name))

    async def slow_with_bad_cleanup(self, name, started):
        started.set()
        try:
            await self.hang.wait()
        finally:
            self.log.append(("cleanup-failed", name))
            raise OSError(f"{name}: close failed")


@pytest.mark.asyncio
async def test_clean_group_collects_all_results():
    b = Backends()
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(b.ok(f"b{i}", i * i)) for i in range(5)]
    assert [t.result() for t in tasks] == [0, 1, 4, 9, 16]
    assert sorted(b.log) == [("ok", f"b{i}") for i in range(5)]


@pytest.mark.asyncio
async def test_one_failure_cancels_siblings_and_raises_group():
    b = Backends()
    started = asyncio.Event()
    with pytest.raises(ExceptionGroup, match="unhandled errors in a TaskGroup") as excinfo:
        async with asyncio.TaskGroup() as tg:
            sibling = tg.create_task(b.slow("search", started))
            await started.wait()
            tg.create_task(b.fail("billing"))
    assert excinfo.group_contains(BackendError, match="billing")
    assert len(excinfo.value.exceptions) == 1
    assert sibling.cancelled()
    assert ("cancelled", "search") in b.log


@pytest.mark.asyncio
async def test_except_star_splits_failure_and_cleanup_error():
    b = Backends()
    started = asyncio.Event()
    handled = {}
    try:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(b.slow_with_bad_cleanup("cache", started))
            await started.wait()
            tg.create_task(b.fail("db"))
    except* BackendError as eg:
        handled["backend"] = [str(e) for e in eg.exceptions]
    except* OSError as eg:
        handled["os"] = [str(e) for e in eg.exceptions]
    assert handled == {"backend": ["db"], "os": ["cache: close failed"]}


@pytest.mark.asyncio
async def test_cancelling_the_parent_cancels_children_and_propagates():
    b = Backends()
    started = asyncio.Event()
    children = []

    async def aggregator():
        async with asyncio.TaskGroup() as tg:
            for name in ("a", "b", "c"):
                children.append(tg.create_task(b.slow(name, started)))
            await b.hang.wait()

    parent = asyncio.create_task(aggregator())
    async with asyncio.timeout(10):          # all three children are inside
        while len(b.entered) < 3:
            await asyncio.sleep(0.01)
    parent.cancel()
    with pytest.raises(asyncio.CancelledError):
        await parent
    assert all(c.cancelled() for c in children)
    assert sorted(b.log) == [("cancelled", "a"), ("cancelled", "b"), ("cancelled", "c")]


@pytest.mark.asyncio
async def test_gather_return_exceptions_keeps_argument_order():
    b = Backends()
    results = await asyncio.gather(
        b.ok("x", 1), b.fail("y"), b.ok("z", 3), return_exceptions=True
    )
    assert results[0] == 1 and results[2] == 3
    assert isinstance(results[1], BackendError) and str(results[1]) == "y"
