import asyncio
import threading

import pytest

from relay import Closed, ThreadSupervisor, periodic
from _helpers import EVENTUALLY, wait_until


@pytest.mark.asyncio
async def test_periodic_threads_are_stopped_and_joined():
    sup = ThreadSupervisor()
    hits = []
    sup.spawn("tick", periodic(0.002, lambda: hits.append(1)))
    await wait_until(lambda: len(hits) >= 3)
    assert await sup.shutdown() == []
    assert sup.alive == []
    assert sup.results["relay-sup-tick"] == len(hits)


@pytest.mark.asyncio
async def test_thread_errors_are_recorded():
    sup = ThreadSupervisor()

    def bad(stop):
        raise OSError("device gone")

    sup.spawn("bad", bad)
    assert await sup.shutdown() == []
    assert isinstance(sup.errors["relay-sup-bad"], OSError)


@pytest.mark.asyncio
async def test_spawn_after_shutdown_is_refused():
    sup = ThreadSupervisor()
    await sup.shutdown()
    with pytest.raises(Closed):
        sup.spawn("late", lambda stop: None)


@pytest.mark.asyncio
async def test_shutdown_does_not_block_the_loop():
    sup = ThreadSupervisor()
    gate = threading.Event()

    def slow_to_stop(stop):
        stop.wait()
        gate.wait()  # only a loop-side task can release this
        return "done"

    sup.spawn("slow", slow_to_stop)

    async def release_after_stop():
        await wait_until(sup.stop_event.is_set)
        await asyncio.sleep(0.01)
        gate.set()

    async with asyncio.timeout(EVENTUALLY):
        stragglers, _ = await asyncio.gather(sup.shutdown(), release_after_stop())
    assert stragglers == []
    assert sup.results["relay-sup-slow"] == "done"


@pytest.mark.asyncio
async def test_stragglers_are_reported_then_joined():
    sup = ThreadSupervisor()
    gate = threading.Event()
    sup.spawn("stubborn", lambda stop: gate.wait())
    assert await sup.shutdown(timeout=0.02) == ["relay-sup-stubborn"]
    gate.set()
    assert await sup.shutdown() == []


@pytest.mark.asyncio
async def test_worker_threads_feed_an_asyncio_queue_threadsafely():
    loop = asyncio.get_running_loop()
    q: asyncio.Queue = asyncio.Queue()
    sup = ThreadSupervisor()

    def producer(stop, w):
        for i in range(50):
            loop.call_soon_threadsafe(q.put_nowait, (w, i))
        return 50

    for w in range(3):
        sup.spawn(f"p{w}", producer, w)
    got = []
    async with asyncio.timeout(EVENTUALLY):
        while len(got) < 150:
            got.append(await q.get())
    assert await sup.shutdown() == []
    for w in range(3):
        assert [i for (ww, i) in got if ww == w] == list(range(50))
