"""A webhook redelivery slips past the dedupe check while the first put waits.

Modelled on warestack/watchflow#43 (review comment on `TaskQueue.enqueue`:
the task id is checked against the dedupe cache, the task is awaited into the
queue, and only then is the id added to the cache, so a duplicate arriving
while `await queue.put()` blocks is enqueued too; the fix reserves the id
before the first await) and openclaw/openclaw#68341 (same "in-flight map set
after an await" pattern in a send path).

Only tasks are involved, no threads.  The bounded queue is full, so the first
delivery's `put` waits until the worker finishes its current job (a 2 ms
timer).  The provider's redelivery of the same event is parsed cooperatively
and then checked against `seen`.  If the parse takes longer than the worker's
job, the id is already recorded and the duplicate is skipped; if it is
quicker, the event is processed twice.

Kind: race (tasks only; check-then-act across an await).
"""
import asyncio
import json

import pytest

JOB = 0.002
CHUNKS = 33
PAYLOAD_CHUNK = json.dumps([{"sha": f"{i:040x}", "files": [f"f{i}.py"]} for i in range(300)])


class TaskQueue:
    def __init__(self, maxsize):
        self.queue = asyncio.Queue(maxsize)
        self.seen = set()
        self.processed = []

    async def enqueue(self, event_id):
        if event_id in self.seen:
            return False
        await self.queue.put(event_id)  # BUG: the id is recorded only after this await
        self.seen.add(event_id)
        return True

    async def worker(self):
        while True:
            event_id = await self.queue.get()
            await asyncio.sleep(JOB)  # run the checks for this push
            self.processed.append(event_id)
            self.queue.task_done()


async def deliver(q, event_id, chunks):
    for _ in range(chunks):
        json.loads(PAYLOAD_CHUNK)  # signature check + parse of the push payload
        await asyncio.sleep(0)
    return await q.enqueue(event_id)


@pytest.mark.asyncio
async def test_redelivery_is_processed_once():
    q = TaskQueue(maxsize=1)
    worker = asyncio.ensure_future(q.worker())
    try:
        await q.enqueue("older-push")          # the worker picks this up ...
        await asyncio.sleep(0)
        await q.enqueue("another-push")        # ... and this one fills the queue
        await asyncio.gather(deliver(q, "push-42", 0), deliver(q, "push-42", CHUNKS))
        await asyncio.wait_for(q.queue.join(), 5)
    finally:
        worker.cancel()
        try:
            await worker
        except asyncio.CancelledError:
            pass
    assert q.processed.count("push-42") == 1, q.processed
