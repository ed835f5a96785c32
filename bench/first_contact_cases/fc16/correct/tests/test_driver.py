import asyncio
import threading

import pytest

from relay import CallTimeout, Closed, Driver
from _helpers import EPS, EVENTUALLY


@pytest.mark.asyncio
async def test_put_get_roundtrip(driver):
    await driver.put("a", 1)
    assert await driver.get("a") == 1
    assert await driver.get("missing", "dflt") == "dflt"


@pytest.mark.asyncio
async def test_every_request_runs_on_the_driver_thread(driver):
    idents = await asyncio.gather(*(driver.call(lambda s: threading.get_ident()) for _ in range(10)))
    assert set(idents) == {driver.thread.ident}
    assert driver.thread.ident != threading.get_ident()


@pytest.mark.asyncio
async def test_concurrent_increments_are_serialised(driver):
    results = await asyncio.gather(*(driver.incr("n") for _ in range(50)))
    assert sorted(results) == list(range(1, 51))
    assert await driver.get("n") == 50
    assert driver.pending == 0


@pytest.mark.asyncio
async def test_error_propagates_and_driver_survives(driver):
    def boom(store):
        raise LookupError("nope")

    with pytest.raises(LookupError):
        await driver.call(boom)
    assert await driver.incr("after") == 1


@pytest.mark.asyncio
async def test_timeout_of_running_request_drops_late_reply(driver, loop_errors):
    gate, entered = threading.Event(), threading.Event()

    def blocked(store):
        entered.set()
        gate.wait(EVENTUALLY)
        return "late"

    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(CallTimeout) as info:
        await driver.call(blocked, timeout=0.05)
    assert loop.time() - t0 >= 0.05 - EPS
    assert isinstance(info.value, TimeoutError)
    gate.set()
    assert await driver.get("x", "next") == "next"  # the driver moved on
    # `started` is exact: the request ran iff the thread picked it up first
    assert entered.is_set() == info.value.started
    assert driver.pending == 0


@pytest.mark.asyncio
async def test_timeout_of_queued_request_never_runs(driver):
    gate = threading.Event()
    ran = []
    blocker = asyncio.ensure_future(driver.call(lambda s: gate.wait(EVENTUALLY)))
    await asyncio.sleep(0)  # the blocker is queued first
    with pytest.raises(CallTimeout) as info:
        await driver.call(lambda s: ran.append(1), timeout=0.05)
    assert info.value.started is False
    gate.set()
    assert await asyncio.wait_for(blocker, EVENTUALLY) is True
    await driver.get("sync")
    assert ran == []


@pytest.mark.asyncio
async def test_cancelled_caller_leaves_nothing_pending(driver, loop_errors):
    gate = threading.Event()
    task = asyncio.ensure_future(driver.call(lambda s: gate.wait(EVENTUALLY)))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert driver.pending == 0
    gate.set()
    assert await driver.incr("k") == 1


@pytest.mark.asyncio
async def test_concurrent_close_is_idempotent():
    d = await Driver().start()
    await asyncio.gather(d.close(), d.close(), d.close())
    assert not d.thread.is_alive()
    with pytest.raises(Closed):
        await d.get("a")


@pytest.mark.asyncio
async def test_queued_requests_finish_before_close():
    d = await Driver().start()
    calls = [asyncio.ensure_future(d.incr("n")) for _ in range(20)]
    await asyncio.sleep(0)  # every call has enqueued its request
    await d.close()
    assert sorted(await asyncio.gather(*calls)) == list(range(1, 21))
