"""Input for tests/test_cannot_lie.py: a sync test whose coroutine runs on a loop in another thread.

asgiref's async_to_sync runs asyncio.run in a ThreadPoolExecutor thread; starlette's TestClient runs
its app through anyio's blocking portal, a loop in a thread of its own. The loop is asyncio's stock
one, on real time, in a thread that is not the test's: not explored, and the reason says so (it
must not call asyncio's own loop class "the test's own loop class").
"""

import asyncio
import concurrent.futures


async def answer() -> int:
    await asyncio.sleep(0.001)
    return 42


def test_a_portal_runs_the_coroutine_in_a_thread_of_its_own() -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert pool.submit(asyncio.run, answer()).result(timeout=10) == 42
