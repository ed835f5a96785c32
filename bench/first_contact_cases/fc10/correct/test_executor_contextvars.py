"""run_in_executor with a test-owned ThreadPoolExecutor, and contextvars in
tasks, callbacks and threads, in the style of request-scoped context
(structlog / OpenTelemetry style request ids) and blocking-IO offload.
"""
import asyncio
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

request_id = contextvars.ContextVar("request_id", default="-")


@pytest.fixture
def pool():
    ex = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fc10-io")
    yield ex
    ex.shutdown(wait=True)


def blocking_hash(data):
    import hashlib
    return hashlib.sha256(data).hexdigest()[:8], threading.current_thread().name


@pytest.mark.asyncio
async def test_run_in_executor_uses_our_pool(pool):
    loop = asyncio.get_running_loop()
    results = await asyncio.gather(
        *(loop.run_in_executor(pool, blocking_hash, f"blob{i}".encode())
          for i in range(6)))
    assert len({h for h, _ in results}) == 6
    assert all(name.startswith("fc10-io") for _, name in results)


@pytest.mark.asyncio
async def test_two_jobs_run_concurrently_in_a_pool_of_two(pool):
    loop = asyncio.get_running_loop()
    rendezvous = threading.Barrier(2, timeout=20)

    def job(n):
        rendezvous.wait()        # only returns if both jobs run at once
        return n

    assert sorted(await asyncio.wait_for(asyncio.gather(
        loop.run_in_executor(pool, job, 1),
        loop.run_in_executor(pool, job, 2)), 30)) == [1, 2]


@pytest.mark.asyncio
async def test_cancelling_the_await_does_not_stop_a_running_thread_job(pool):
    loop = asyncio.get_running_loop()
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def job():
        started.set()
        release.wait(20)
        finished.set()
        return "done"

    fut = loop.run_in_executor(pool, job)
    assert await asyncio.to_thread(started.wait, 20)
    fut.cancel()
    with pytest.raises(asyncio.CancelledError):
        await fut
    assert not finished.is_set()
    release.set()
    assert await asyncio.to_thread(finished.wait, 20)


@pytest.mark.asyncio
async def test_context_is_copied_into_tasks_not_shared_back():
    request_id.set("req-1")
    seen = {}

    async def handler():
        seen["inherited"] = request_id.get()
        request_id.set("req-child")
        await asyncio.sleep(0)
        seen["own"] = request_id.get()

    await asyncio.create_task(handler())
    assert seen == {"inherited": "req-1", "own": "req-child"}
    assert request_id.get() == "req-1"

    other = contextvars.copy_context()
    other.run(request_id.set, "req-explicit")
    t = asyncio.create_task(handler(), context=other)
    await t
    assert seen["inherited"] == "req-explicit"


@pytest.mark.asyncio
async def test_callbacks_and_threads_see_the_right_context(pool):
    loop = asyncio.get_running_loop()
    request_id.set("req-cb")
    seen = {}
    done = asyncio.Event()

    def callback(tag):
        seen[tag] = request_id.get()
        if len(seen) == 2:
            done.set()

    loop.call_soon(callback, "captured")       # copies the current context
    ctx = contextvars.Context()                 # empty context: default value
    loop.call_soon(callback, "explicit", context=ctx)
    await asyncio.wait_for(done.wait(), 10)
    assert seen == {"captured": "req-cb", "explicit": "-"}

    # to_thread propagates the context; a bare executor thread does not
    assert await asyncio.to_thread(request_id.get) == "req-cb"
    assert await loop.run_in_executor(pool, request_id.get) == "-"
