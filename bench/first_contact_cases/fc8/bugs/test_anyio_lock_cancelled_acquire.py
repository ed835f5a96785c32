"""Model of anyio's ``Lock`` (asyncio backend) staying locked forever when the
task acquiring it is cancelled at the checkpoint inside ``acquire()``.

Report: https://github.com/agronholm/anyio/issues/398 ("Deadlock in anyio.Lock"),
found through https://github.com/encode/httpcore/issues/454 ("Deadlock in
AsyncConnectionPool").

Paraphrase of the report: with the right timing, the lock's acquire step can
be cancelled after the lock has already been given to the task.  Because the
cancellation happens inside ``__aenter__``, ``__aexit__`` never runs, the lock
is never released, and every other task that needs it (httpcore's connection
pool lock) waits forever.  The reporter notes that ``asyncio.Lock`` does not
have the problem because its uncontended ``__aenter__`` never yields.

The model's lock takes ownership and then yields at a checkpoint, as the
reported version did.  The test mimics httpx usage: a request to a slow
endpoint is wrapped in a 50 ms timeout; the request first prepares itself
(~1 ms), takes the pool lock only to pick a connection, and then waits for the
slow response.  Normally the timeout cancels it while it waits for the
response, after the lock was released.  If the preparation step takes long
enough that the timeout fires just as the task is at the lock's checkpoint,
the lock leaks and the next request cannot get a connection.
"""

import asyncio
import collections

import pytest

EXPECTED = {"cause": "cancelled_handoff", "resource": "AsyncConnectionPool._pool_lock"}

PREPARE_LATENCY = 0.001
REQUEST_TIMEOUT = 0.05


class CheckpointLock:
    """Lock whose acquire takes ownership first and then hits a checkpoint."""

    def __init__(self) -> None:
        self._owner: asyncio.Task | None = None
        self._waiters: collections.deque[tuple[asyncio.Task, asyncio.Future]] = collections.deque()

    def locked(self) -> bool:
        return self._owner is not None

    async def acquire(self) -> None:
        task = asyncio.current_task()
        if self._owner is None and not self._waiters:
            self._owner = task
            # BUG (as reported): a cancellation delivered at this checkpoint
            # propagates out of __aenter__ while the lock is already owned.
            await asyncio.sleep(0)
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append((task, fut))
        try:
            await fut
        except asyncio.CancelledError:
            if self._owner is task:
                self.release()
            else:
                self._waiters = collections.deque(w for w in self._waiters if w[1] is not fut)
            raise

    def release(self) -> None:
        if self._waiters:
            task, fut = self._waiters.popleft()
            self._owner = task
            fut.set_result(None)
        else:
            self._owner = None

    async def __aenter__(self):
        await self.acquire()
        return self

    async def __aexit__(self, *exc_info):
        self.release()


class ConnectionPool:
    def __init__(self, size: int) -> None:
        self._pool_lock = CheckpointLock()
        self._idle = list(range(size))

    async def handle_request(self, path: str) -> str:
        await asyncio.sleep(PREPARE_LATENCY)  # build request, resolve origin
        async with self._pool_lock:
            conn = self._idle.pop()
        try:
            delay = 60 if path == "/slow" else 0.001
            await asyncio.sleep(delay)  # send request, await response
            return f"200 {path} via conn {conn}"
        finally:
            async with self._pool_lock:
                self._idle.append(conn)


@pytest.mark.asyncio
async def test_pool_usable_after_request_timeout():
    pool = ConnectionPool(size=2)

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(pool.handle_request("/slow"), timeout=REQUEST_TIMEOUT)

    response = await asyncio.wait_for(pool.handle_request("/fast"), timeout=2)
    assert response.startswith("200 /fast")
