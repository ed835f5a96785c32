"""Bridging blocking worker threads and the event loop, as sync/async adapter
libraries do (asgiref's async_to_sync, janus, Modal's synchronicity, a Qt or
hardware callback thread feeding an asyncio app).

Worker threads submit coroutines with ``asyncio.run_coroutine_threadsafe`` and block
on the returned ``concurrent.futures.Future``; the loop side awaits work done in
threads through ``asyncio.wrap_future`` and receives callbacks through
``call_soon_threadsafe``.
"""
import asyncio
import concurrent.futures
import threading

import pytest

pytestmark = pytest.mark.asyncio


class Inventory:
    """Loop-owned state that threads may only touch through the loop."""

    def __init__(self):
        self.stock = {"apple": 3}
        self.lock = asyncio.Lock()

    async def take(self, item):
        async with self.lock:
            await asyncio.sleep(0)
            if self.stock.get(item, 0) <= 0:
                raise LookupError(f"{item} sold out")
            self.stock[item] -= 1
            return threading.get_ident()


def run_in_thread(fn, *args):
    results = {}

    def body():
        try:
            results["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            results["error"] = exc

    th = threading.Thread(target=body, name="bridge-worker")
    th.start()
    return th, results


async def join(th):
    await asyncio.to_thread(th.join, 20)
    assert not th.is_alive()


async def test_thread_submits_coroutine_and_gets_result():
    loop = asyncio.get_running_loop()
    inv = Inventory()
    loop_thread = threading.get_ident()

    def worker():
        fut = asyncio.run_coroutine_threadsafe(inv.take("apple"), loop)
        return fut.result(timeout=20), threading.get_ident()

    th, res = run_in_thread(worker)
    await join(th)
    ran_on, worker_ident = res["value"]
    assert ran_on == loop_thread
    assert worker_ident != loop_thread
    assert inv.stock["apple"] == 2


async def test_exception_reaches_the_thread():
    loop = asyncio.get_running_loop()
    inv = Inventory()

    def worker():
        fut = asyncio.run_coroutine_threadsafe(inv.take("pear"), loop)
        return fut.result(timeout=20)

    th, res = run_in_thread(worker)
    await join(th)
    assert isinstance(res["error"], LookupError)
    assert "pear sold out" in str(res["error"])


async def test_thread_cancel_cancels_the_task():
    loop = asyncio.get_running_loop()
    started = threading.Event()
    cleaned = asyncio.Event()

    async def long_poll():
        try:
            started.set()
            await asyncio.Event().wait()
        finally:
            cleaned.set()

    def worker():
        fut = asyncio.run_coroutine_threadsafe(long_poll(), loop)
        assert started.wait(20)
        assert fut.cancel()
        try:
            fut.result(timeout=20)
        except concurrent.futures.CancelledError:
            return "cancelled"

    th, res = run_in_thread(worker)
    await asyncio.wait_for(cleaned.wait(), 20)
    await join(th)
    assert res == {"value": "cancelled"}


async def test_wrap_future_from_plain_thread_and_executor():
    cf = concurrent.futures.Future()

    def producer():
        cf.set_running_or_notify_cancel()
        cf.set_result({"rows": 3})

    th = threading.Thread(target=producer)
    th.start()
    assert await asyncio.wait_for(asyncio.wrap_future(cf), 20) == {"rows": 3}
    await join(th)

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        futs = [asyncio.wrap_future(ex.submit(pow, 2, n)) for n in range(5)]
        assert await asyncio.gather(*futs) == [1, 2, 4, 8, 16]


async def test_cancelling_wrapper_cancels_queued_executor_job():
    gate = threading.Event()
    ex = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        blocker = ex.submit(gate.wait, 20)
        queued = ex.submit(lambda: "never")
        wrapper = asyncio.wrap_future(queued)
        wrapper.cancel()
        with pytest.raises(asyncio.CancelledError):
            await wrapper
        async with asyncio.timeout(20):
            while not queued.cancelled():
                await asyncio.sleep(0.01)
    finally:
        gate.set()
        ex.shutdown(wait=True)
    assert blocker.result() is True


async def test_call_soon_threadsafe_keeps_each_threads_order():
    loop = asyncio.get_running_loop()
    got = []
    all_in = asyncio.Event()
    per_thread = 50

    def deliver(item):
        got.append(item)
        if len(got) == 4 * per_thread:
            all_in.set()

    def sender(tid):
        for i in range(per_thread):
            loop.call_soon_threadsafe(deliver, (tid, i))

    threads = [threading.Thread(target=sender, args=(tid,)) for tid in range(4)]
    for th in threads:
        th.start()
    await asyncio.wait_for(all_in.wait(), 20)
    for th in threads:
        await join(th)
    for tid in range(4):
        assert [i for (t, i) in got if t == tid] == list(range(per_thread))
