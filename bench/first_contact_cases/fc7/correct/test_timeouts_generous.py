"""asyncio.wait_for / asyncio.timeout with generous margins, both expiring and not."""
import asyncio
import time

import pytest


@pytest.mark.asyncio
async def test_wait_for_completes_well_within_timeout():
    assert await asyncio.wait_for(asyncio.sleep(0.02, result="x"), timeout=5) == "x"


@pytest.mark.asyncio
async def test_wait_for_times_out_after_real_delay():
    t0 = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.sleep(30), timeout=0.1)
    elapsed = time.monotonic() - t0
    assert 0.095 <= elapsed < 3.0


@pytest.mark.asyncio
async def test_timeout_context_manager_expires():
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.08):
            await asyncio.sleep(30)
    assert time.monotonic() - t0 >= 0.075


@pytest.mark.asyncio
async def test_timeout_reschedule_extends_deadline():
    loop = asyncio.get_running_loop()
    t0 = time.monotonic()
    async with asyncio.timeout(0.05) as cm:
        cm.reschedule(loop.time() + 5)
        await asyncio.sleep(0.1)
    assert not cm.expired()
    assert time.monotonic() - t0 >= 0.095


@pytest.mark.asyncio
async def test_timeout_at_absolute_deadline():
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 0.06
    with pytest.raises(TimeoutError):
        async with asyncio.timeout_at(deadline):
            await asyncio.Event().wait()
    assert loop.time() >= deadline - 0.002


@pytest.mark.asyncio
async def test_inner_task_cleanup_runs_on_timeout():
    cleaned = asyncio.Event()

    async def worker():
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.set()

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(worker(), timeout=0.05)
    assert cleaned.is_set()
