"""Job queue: worker tasks, retries with exponential backoff (call_later), dead letters,
status events on the broker, and drain/stop for shutdown."""
import asyncio
import itertools
from dataclasses import dataclass, field

from . import metrics
from .logs import bind_request_id, get_logger

log = get_logger("app.jobs")
QUEUED, RUNNING, RETRYING, DONE, DEAD, CANCELLED = "queued", "running", "retrying", "done", "dead", "cancelled"
FINAL = {DONE, DEAD, CANCELLED}


class UnknownJobKind(LookupError):
    pass


@dataclass
class Job:
    id: str
    kind: str
    payload: object
    status: str = QUEUED
    attempts: int = 0
    result: object = None
    error: str = None
    attempt_started: list = field(default_factory=list)  # loop.time() of each attempt start
    failed_at: list = field(default_factory=list)        # loop.time() of each failure
    _done: asyncio.Future = field(default=None, repr=False)

    def as_dict(self):
        return {"id": self.id, "kind": self.kind, "status": self.status, "attempts": self.attempts,
                "result": self.result, "error": self.error}

    async def wait(self):
        await asyncio.shield(self._done)
        return self


class JobQueue:
    _ids = itertools.count(1)

    def __init__(self, handlers, workers=2, max_retries=2, backoff=0.05, broker=None, prefix="job"):
        self.handlers = dict(handlers)
        self.n_workers = workers
        self.max_retries = max_retries
        self.backoff = backoff
        self.broker = broker
        self.prefix = prefix
        self.jobs = {}
        self.dead_letters = []
        self._queue = asyncio.Queue()
        self._workers = []
        self._timers = {}
        self._active = set()
        self._idle = asyncio.Event()
        self._idle.set()
        self.stopped = False

    def submit(self, kind, payload=None) -> Job:
        if self.stopped:
            raise RuntimeError("job queue is stopped")
        job = Job(f"{self.prefix}-{next(self._ids)}", kind, payload)
        job._done = asyncio.get_running_loop().create_future()
        self.jobs[job.id] = job
        self._active.add(job.id)
        self._idle.clear()
        self._queue.put_nowait(job)
        self._emit(job)
        metrics.incr("jobs.submitted")
        return job

    def _emit(self, job):
        if self.broker is not None:
            self.broker.publish(f"jobs.{job.status}", job.as_dict())

    def _finish(self, job, status):
        job.status = status
        self._active.discard(job.id)
        if not job._done.done():
            job._done.set_result(job)
        if not self._active:
            self._idle.set()
        self._emit(job)
        metrics.incr(f"jobs.{status}")

    async def start(self):
        for i in range(self.n_workers):
            self._workers.append(asyncio.create_task(self._worker(i), name=f"{self.prefix}-worker-{i}"))

    async def _worker(self, index):
        loop = asyncio.get_running_loop()
        while True:
            job = await self._queue.get()
            try:
                await self._run(job, loop)
            finally:
                self._queue.task_done()

    async def _run(self, job, loop):
        handler = self.handlers.get(job.kind)
        if handler is None:
            job.error = f"unknown kind {job.kind!r}"
            self.dead_letters.append(job)
            self._finish(job, DEAD)
            return
        job.attempts += 1
        job.status = RUNNING
        job.attempt_started.append(loop.time())
        with bind_request_id(job.id):
            try:
                result = await handler(job.payload)
            except asyncio.CancelledError:
                self._finish(job, CANCELLED)
                raise
            except Exception as exc:
                job.failed_at.append(loop.time())
                job.error = f"{type(exc).__name__}: {exc}"
                if job.attempts > self.max_retries:
                    log.warning("job.dead", id=job.id, attempts=job.attempts)
                    self.dead_letters.append(job)
                    self._finish(job, DEAD)
                else:
                    delay = self.backoff * 2 ** (job.attempts - 1)
                    log.info("job.retry", id=job.id, attempt=job.attempts, delay=delay)
                    job.status = RETRYING
                    self._emit(job)
                    self._timers[job.id] = loop.call_later(delay, self._requeue, job)
                return
        job.result = result
        job.error = None
        self._finish(job, DONE)

    def _requeue(self, job):
        self._timers.pop(job.id, None)
        job.status = QUEUED
        self._queue.put_nowait(job)

    async def drain(self):
        await self._idle.wait()

    async def stop(self, drain=True, timeout=None):
        self.stopped = True
        if drain:
            await asyncio.wait_for(self.drain(), timeout)
        for handle in self._timers.values():
            handle.cancel()
        for job_id in list(self._timers):
            self._finish(self.jobs[job_id], CANCELLED)
        self._timers.clear()
        for w in self._workers:
            w.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers.clear()
        while not self._queue.empty():
            job = self._queue.get_nowait()
            self._queue.task_done()
            if job.status not in FINAL:
                self._finish(job, CANCELLED)
