"""The scheduling guarantees that cooperative libraries rely on: ``sleep(0)``
round-robin between tasks that only yield (used by chunked encoders and "be nice"
loops), ``shield`` for commit steps, nested ``asyncio.timeout`` scopes with
``reschedule`` (per-call deadlines inside an overall budget), ``loop.time()``
never going backwards, and ``call_at`` timers in deadline order when the deadlines
are far apart.
"""
import asyncio

import pytest

pytestmark = pytest.mark.asyncio


async def test_sleep0_round_robin_between_two_yielding_tasks():
    log = []

    async def chunker(name, n):
        for _ in range(n):
            log.append(name)
            await asyncio.sleep(0)

    a = asyncio.create_task(chunker("A", 5))
    b = asyncio.create_task(chunker("B", 5))
    await asyncio.gather(a, b)
    assert "".join(log) == "ABABABABAB"


async def test_shield_keeps_commit_running_after_outer_cancel():
    committed = []
    entered = asyncio.Event()
    release = asyncio.Event()

    async def commit(txid):
        entered.set()
        await release.wait()
        committed.append(txid)
        return f"{txid} committed"

    inner = asyncio.create_task(commit("tx-9"))

    async def request():
        return await asyncio.shield(inner)

    outer = asyncio.create_task(request())
    await asyncio.wait_for(entered.wait(), 20)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert not inner.done()
    release.set()
    assert await asyncio.wait_for(inner, 20) == "tx-9 committed"
    assert committed == ["tx-9"]


async def test_nested_timeouts_inner_fires_outer_untouched():
    loop = asyncio.get_running_loop()
    attempts = []
    async with asyncio.timeout(30) as overall:
        for i in range(2):
            start = loop.time()
            try:
                async with asyncio.timeout(0.1):
                    await asyncio.sleep(10)
            except TimeoutError:
                attempts.append(loop.time() - start)
    assert len(attempts) == 2
    assert all(0.09 <= a < 10 for a in attempts)
    assert not overall.expired()
    assert asyncio.current_task().cancelling() == 0


async def test_outer_timeout_wins_over_longer_inner():
    loop = asyncio.get_running_loop()
    inner_saw = []
    start = loop.time()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1) as outer:
            try:
                async with asyncio.timeout(20):
                    await asyncio.sleep(10)
            except asyncio.CancelledError:
                inner_saw.append("cancelled")
                raise
    assert outer.expired()
    assert inner_saw == ["cancelled"]
    assert loop.time() - start >= 0.09


async def test_reschedule_from_none_and_when():
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(None) as cm:
            assert cm.when() is None
            deadline = loop.time() + 0.1
            cm.reschedule(deadline)
            assert cm.when() == deadline
            await asyncio.sleep(10)
    assert cm.expired()
    assert loop.time() - start >= 0.09
    async with asyncio.timeout(0.05) as cm2:
        cm2.reschedule(None)
        await asyncio.sleep(0.1)
    assert not cm2.expired()


async def test_loop_time_never_decreases():
    loop = asyncio.get_running_loop()
    samples = []

    async def sampler():
        for i in range(100):
            samples.append(loop.time())
            await asyncio.sleep(0 if i % 10 else 0.001)

    await asyncio.gather(sampler(), sampler())
    assert len(samples) == 200
    assert all(b >= a for a, b in zip(samples, samples[1:]))


async def test_call_at_fires_in_deadline_order_not_early():
    loop = asyncio.get_running_loop()
    fired = []
    done = asyncio.Event()
    t0 = loop.time()

    def note(label, deadline):
        fired.append((label, loop.time(), deadline))
        if len(fired) == 2:
            done.set()

    late = t0 + 0.6
    early = t0 + 0.05
    loop.call_at(late, note, "late", late)
    loop.call_at(early, note, "early", early)
    await asyncio.wait_for(done.wait(), 20)
    assert [label for label, _, _ in fired] == ["early", "late"]
    assert all(at >= deadline - 0.01 for _, at, deadline in fired)
