"""Model of Tornado's ``Queue.get`` losing an item when the getter is cancelled.

Report: https://github.com/tornadoweb/tornado/issues/2826
("Queue.get loses result on CancelledError").

Paraphrase of the report: when a coroutine is waiting in ``Queue.get``,
``put_nowait`` takes the item off the queue and hands it straight to the
waiting getter's future.  If the getter's task is cancelled after that hand-off
but before it resumes (for instance because its timeout expires at that moment),
the ``CancelledError`` is raised instead of returning the item, and the item is
gone: it is neither in the queue nor delivered.  The reporter hit it as a
server hang in a job agent and worked around it with a subclass that puts the
item back when the get is cancelled.

The model reproduces that queue (direct hand-off to the first getter, no
cancellation handling) and a job agent that polls the queue with
``wait_for(queue.get(), 0.5)`` so that it can notice a shutdown flag.  Jobs
arrive every 30 ms, so normally the timeout never fires.  If the producer's
step runs late enough that a job is handed over in the same loop iteration as
the poll's timeout, the cancellation wins and that job is silently lost.
"""

import asyncio
import collections

import pytest

EXPECTED = {"cause": "cancelled_handoff", "resource": "Queue item handed to a cancelled getter"}

JOB_INTERVAL = 0.03
POLL_TIMEOUT = 0.5


class HandoffQueue:
    def __init__(self) -> None:
        self._items: collections.deque = collections.deque()
        self._getters: collections.deque[asyncio.Future] = collections.deque()

    def qsize(self) -> int:
        return len(self._items)

    def put_nowait(self, item) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(item)  # the item leaves the queue here
                return
        self._items.append(item)

    async def get(self):
        if self._items:
            return self._items.popleft()
        fut = asyncio.get_running_loop().create_future()
        self._getters.append(fut)
        # BUG (as reported): if cancelled after put_nowait() resolved `fut`,
        # the item it carries is dropped.
        return await fut


@pytest.mark.asyncio
async def test_job_agent_processes_every_job():
    queue = HandoffQueue()
    processed: list[str] = []
    stopping = False
    jobs = [f"job-{i}" for i in range(5)]

    async def producer():
        for job in jobs:
            await asyncio.sleep(JOB_INTERVAL)
            queue.put_nowait(job)
        await asyncio.sleep(JOB_INTERVAL)
        queue.put_nowait(None)

    async def agent():
        while True:
            try:
                job = await asyncio.wait_for(queue.get(), timeout=POLL_TIMEOUT)
            except asyncio.TimeoutError:
                if stopping:
                    return
                continue  # nothing yet; poll again
            if job is None:
                return
            await asyncio.sleep(0.001)  # run the job
            processed.append(job)

    await asyncio.wait_for(asyncio.gather(producer(), agent()), timeout=10)
    assert processed == jobs
