import asyncio

import pytest
import pytest_asyncio

from app.broker import Broker
from app.jobs import CANCELLED, DEAD, DONE, JobQueue
from app.service import FlakyHandler

pytestmark = pytest.mark.asyncio
EPS = 0.01


class Gate:
    """A handler that records entries and blocks until released."""

    def __init__(self):
        self.entered = 0
        self.running = 0
        self.max_running = 0
        self.release = asyncio.Event()
        self.changed = asyncio.Event()

    async def __call__(self, payload):
        self.entered += 1
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.changed.set()
        try:
            await self.release.wait()
        finally:
            self.running -= 1
        return payload

    async def wait_entered(self, n):
        while self.entered < n:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 20)


@pytest.fixture
def broker():
    return Broker()


@pytest.fixture
def handlers():
    async def echo(p):
        return p

    async def fail(p):
        raise ValueError(f"bad {p}")

    return {"echo": echo, "fail": fail, "flaky": FlakyHandler(), "gate": Gate()}


@pytest_asyncio.fixture
async def queue(handlers, broker):
    q = JobQueue(handlers, workers=3, max_retries=2, backoff=0.05, broker=broker, prefix="t")
    await q.start()
    yield q
    await q.stop(drain=False)


async def test_echo_job_completes(queue):
    job = queue.submit("echo", {"x": 1})
    await asyncio.wait_for(job.wait(), 20)
    assert (job.status, job.result, job.attempts) == (DONE, {"x": 1}, 1)


async def test_retries_follow_the_backoff(queue):
    job = queue.submit("flaky", {"key": "a", "failures": 2})
    await asyncio.wait_for(job.wait(), 20)
    assert (job.status, job.attempts, job.result) == (DONE, 3, {"key": "a", "attempts": 3})
    for i, failed in enumerate(job.failed_at):
        assert job.attempt_started[i + 1] - failed >= 0.05 * 2 ** i - EPS


async def test_exhausted_retries_go_to_dead_letters(queue):
    job = queue.submit("fail", "x")
    await asyncio.wait_for(job.wait(), 20)
    assert (job.status, job.attempts, job.error) == (DEAD, 3, "ValueError: bad x")
    assert queue.dead_letters == [job]


async def test_unknown_kind_is_dead_at_once(queue):
    job = queue.submit("nope")
    await asyncio.wait_for(job.wait(), 20)
    assert (job.status, job.attempts) == (DEAD, 0)
    assert "unknown kind" in job.error


async def test_status_events_for_one_job(queue, broker):
    with broker.subscribe("jobs.*") as sub:
        job = queue.submit("flaky", {"key": "ev", "failures": 1})
        await asyncio.wait_for(job.wait(), 20)
    statuses = []
    async for topic, data in sub:
        if data["id"] == job.id:
            statuses.append(topic)
    assert statuses == ["jobs.queued", "jobs.retrying", "jobs.done"]


async def test_drain_waits_for_retries(queue):
    jobs = [queue.submit("flaky", {"key": f"d{i}", "failures": 1}) for i in range(4)]
    await asyncio.wait_for(queue.drain(), 20)
    assert [j.status for j in jobs] == [DONE] * 4


async def test_workers_run_jobs_concurrently(queue, handlers):
    gate = handlers["gate"]
    jobs = [queue.submit("gate", i) for i in range(5)]
    await gate.wait_entered(3)
    assert gate.max_running == 3
    gate.release.set()
    await asyncio.wait_for(queue.drain(), 20)
    assert sorted(j.result for j in jobs) == [0, 1, 2, 3, 4]
    assert gate.max_running == 3


async def test_stop_without_drain_cancels_work(handlers, broker):
    queue = JobQueue(handlers, workers=2, max_retries=2, backoff=3600, broker=broker, prefix="s")
    await queue.start()
    gate = handlers["gate"]
    with broker.subscribe("jobs.retrying") as retries:
        running = queue.submit("gate", "r")
        retrying = queue.submit("fail", "s")
        await gate.wait_entered(1)
        topic, data = await asyncio.wait_for(retries.get(), 20)
    assert data["id"] == retrying.id
    await asyncio.wait_for(queue.stop(drain=False), 20)
    assert (running.status, retrying.status) == (CANCELLED, CANCELLED)
    assert retrying.attempts == 1
    with pytest.raises(RuntimeError, match="stopped"):
        queue.submit("echo")
