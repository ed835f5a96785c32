"""Fan-out helpers built on ``asyncio.wait``, ``as_completed`` and ``gather``, as
service clients use them (a replica race, a scatter/gather search, a batch
uploader that keeps per-item errors).

Every worker here finishes only when the test releases it (an Event) or without
awaiting anything, so which futures are done at each point is fixed.
"""
import asyncio

import pytest

pytestmark = pytest.mark.asyncio


class Replica:
    def __init__(self, name):
        self.name = name
        self.release = asyncio.Event()
        self.fail_with = None
        self.cleaned = False

    async def query(self):
        try:
            await self.release.wait()
            if self.fail_with is not None:
                raise self.fail_with
            return f"{self.name}:ok"
        finally:
            self.cleaned = True


async def cancel_all(tasks):
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_first_completed_returns_the_released_one():
    reps = [Replica(n) for n in "abc"]
    tasks = {asyncio.create_task(r.query()): r for r in reps}
    reps[1].release.set()
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED, timeout=20)
    assert [tasks[t].name for t in done] == ["b"]
    assert done.pop().result() == "b:ok"
    assert {tasks[t].name for t in pending} == {"a", "c"}
    await cancel_all(pending)
    assert all(r.cleaned for r in reps)


async def test_first_exception_stops_waiting():
    reps = [Replica(n) for n in "abc"]
    tasks = {asyncio.create_task(r.query()): r for r in reps}
    reps[0].release.set()
    ok_done, _ = await asyncio.wait([t for t, r in tasks.items() if r.name == "a"], timeout=20)
    assert len(ok_done) == 1
    reps[2].fail_with = ConnectionError("replica c down")
    reps[2].release.set()
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION, timeout=20)
    assert {tasks[t].name for t in done} == {"a", "c"}
    failed = [t for t in done if tasks[t].name == "c"][0]
    assert isinstance(failed.exception(), ConnectionError)
    assert {tasks[t].name for t in pending} == {"b"}
    await cancel_all(pending)


async def test_all_completed_with_timeout_keeps_pending():
    loop = asyncio.get_running_loop()

    async def instant(v):
        return v

    hung = Replica("hung")
    fast = [asyncio.create_task(instant(i)) for i in range(2)]
    slow = asyncio.create_task(hung.query())
    start = loop.time()
    done, pending = await asyncio.wait(fast + [slow], timeout=0.2)
    elapsed = loop.time() - start
    assert done == set(fast)
    assert pending == {slow}
    assert elapsed >= 0.19
    assert elapsed < 10
    assert not slow.cancelled()  # wait() never cancels on timeout
    await cancel_all([slow])


async def test_as_completed_yields_in_release_order_and_times_out():
    loop = asyncio.get_running_loop()
    reps = [Replica(n) for n in "xyz"]
    tasks = [asyncio.create_task(r.query()) for r in reps]
    order = []
    it = asyncio.as_completed(tasks, timeout=20)
    for name in ("z", "x"):
        [r for r in reps if r.name == name][0].release.set()
        order.append(await next(it))
    assert order == ["z:ok", "x:ok"]
    await cancel_all(tasks)

    never = Replica("never")
    t = asyncio.create_task(never.query())
    start = loop.time()
    with pytest.raises(asyncio.TimeoutError):
        for fut in asyncio.as_completed([t], timeout=0.2):
            await fut
    assert loop.time() - start >= 0.19
    await cancel_all([t])


async def test_gather_return_exceptions_keeps_positions():
    async def upload(i):
        await asyncio.sleep(0)
        if i % 2:
            raise IOError(f"chunk {i} rejected")
        return i

    results = await asyncio.gather(*(upload(i) for i in range(5)), return_exceptions=True)
    assert [r for r in results if isinstance(r, int)] == [0, 2, 4]
    assert [str(r) for r in results if isinstance(r, Exception)] == [
        "chunk 1 rejected",
        "chunk 3 rejected",
    ]
    assert isinstance(results[1], OSError)


async def test_cancelling_gather_cancels_children_and_individual_cancel_does_not():
    reps = [Replica(n) for n in "pq"]
    started = [asyncio.Event() for _ in reps]

    async def run(i):
        started[i].set()
        return await reps[i].query()

    children = [asyncio.create_task(run(i)) for i in range(2)]
    outer = asyncio.gather(*children)
    for ev in started:
        await asyncio.wait_for(ev.wait(), 20)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert all(c.cancelled() for c in children)
    assert all(r.cleaned for r in reps)

    solo = Replica("solo")
    keep = Replica("keep")
    a = asyncio.create_task(solo.query())
    b = asyncio.create_task(keep.query())
    g = asyncio.gather(a, b, return_exceptions=True)
    a.cancel()
    keep.release.set()
    res = await asyncio.wait_for(g, 20)
    assert isinstance(res[0], asyncio.CancelledError)
    assert res[1] == "keep:ok"
