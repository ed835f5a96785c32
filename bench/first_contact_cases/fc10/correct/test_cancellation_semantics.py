"""Cancellation tests in the style of an async job runner (arq / SAQ / aiojobs
style worker): jobs cancelled with a reason, cleanup in ``finally``, a shielded
commit that must survive the caller's cancellation, jobs that swallow cancel.
"""
import asyncio

import pytest


class Worker:
    def __init__(self):
        self.events = []
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def job(self, name):
        self.events.append(("start", name))
        self.started.set()
        try:
            await self.release.wait()
            self.events.append(("done", name))
            return name
        except asyncio.CancelledError as exc:
            self.events.append(("cancelled", name, exc.args))
            raise
        finally:
            # async cleanup inside finally of a cancelled task still runs
            await asyncio.sleep(0.01)
            self.events.append(("cleanup", name))


@pytest.mark.asyncio
async def test_cancel_message_reaches_the_job_and_the_awaiter():
    w = Worker()
    task = asyncio.create_task(w.job("j1"))
    await asyncio.wait_for(w.started.wait(), 10)
    assert task.cancel("worker shutdown") is True
    with pytest.raises(asyncio.CancelledError) as excinfo:
        await task
    assert task.cancelled()
    assert excinfo.value.args == ("worker shutdown",)
    assert ("cancelled", "j1", ("worker shutdown",)) in w.events
    assert w.events[-1] == ("cleanup", "j1")


@pytest.mark.asyncio
async def test_task_cancelled_before_it_starts_never_runs_its_body():
    w = Worker()
    task = asyncio.create_task(w.job("never"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert w.events == []
    assert not w.started.is_set()


@pytest.mark.asyncio
async def test_shield_lets_the_commit_finish_after_the_caller_is_cancelled():
    committed = asyncio.Event()
    proceed = asyncio.Event()
    in_commit = asyncio.Event()

    async def commit():
        in_commit.set()
        await proceed.wait()
        committed.set()
        return "commit-ok"

    inner = asyncio.ensure_future(commit())

    async def handler():
        return await asyncio.shield(inner)

    outer = asyncio.create_task(handler())
    await asyncio.wait_for(in_commit.wait(), 10)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert not inner.done()          # the shielded work is still running
    proceed.set()
    assert await asyncio.wait_for(inner, 10) == "commit-ok"
    assert committed.is_set()


@pytest.mark.asyncio
async def test_job_that_swallows_cancellation_finishes_normally():
    stopping = asyncio.Event()

    async def graceful():
        try:
            stopping.set()
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            await asyncio.sleep(0.01)
            return "stopped gracefully"

    task = asyncio.create_task(graceful())
    await asyncio.wait_for(stopping.wait(), 10)
    task.cancel()
    assert await asyncio.wait_for(task, 10) == "stopped gracefully"
    assert not task.cancelled()


@pytest.mark.asyncio
async def test_cancel_on_a_finished_task_is_a_no_op():
    w = Worker()
    w.release.set()
    task = asyncio.create_task(w.job("quick"))
    assert await asyncio.wait_for(task, 10) == "quick"
    assert task.cancel() is False
    assert not task.cancelled()
    assert task.result() == "quick"
    assert [e[0] for e in w.events] == ["start", "done", "cleanup"]
