"""Producer/consumer pipeline tests, modelled on a crawler / ETL worker pool that
uses ``asyncio.Queue`` with sentinels, ``join()``/``task_done()``, bounded
queues for backpressure, a three-stage pipeline under a ``TaskGroup``, and a
``get()`` bounded by ``wait_for``.

Every pattern here is the correct textbook form: consumers call ``task_done``
in ``finally``, shutdown uses one sentinel per worker or cancellation after
``join()``, and results are compared order-insensitively where concurrency
makes order unspecified.
"""

import asyncio
import random

import pytest

SENTINEL = object()


@pytest.mark.asyncio
async def test_join_waits_for_every_item_to_be_processed():
    queue: asyncio.Queue[int] = asyncio.Queue()
    processed: list[int] = []

    async def worker():
        while True:
            item = await queue.get()
            try:
                await asyncio.sleep(0.001 * (item % 3))
                processed.append(item)
            finally:
                queue.task_done()

    workers = [asyncio.create_task(worker()) for _ in range(4)]
    for i in range(40):
        queue.put_nowait(i)
    await asyncio.wait_for(queue.join(), timeout=30)
    for w in workers:
        w.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    assert sorted(processed) == list(range(40))


@pytest.mark.asyncio
async def test_sentinel_per_worker_shutdown():
    queue: asyncio.Queue = asyncio.Queue()
    results: dict[int, list[int]] = {}

    async def worker(wid):
        got = results.setdefault(wid, [])
        while (item := await queue.get()) is not SENTINEL:
            got.append(item * item)

    tasks = [asyncio.create_task(worker(w)) for w in range(3)]
    for i in range(30):
        await queue.put(i)
    for _ in tasks:
        await queue.put(SENTINEL)
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
    merged = sorted(x for got in results.values() for x in got)
    assert merged == sorted(i * i for i in range(30))


@pytest.mark.asyncio
async def test_bounded_queue_applies_backpressure():
    queue: asyncio.Queue[int] = asyncio.Queue(maxsize=2)
    high_water = 0
    consumed: list[int] = []

    async def producer():
        nonlocal high_water
        for i in range(20):
            await queue.put(i)
            high_water = max(high_water, queue.qsize())
        await queue.put(-1)

    async def consumer():
        while (item := await queue.get()) != -1:
            consumed.append(item)
            await asyncio.sleep(0.001)

    await asyncio.wait_for(asyncio.gather(producer(), consumer()), timeout=30)
    assert consumed == list(range(20))  # single consumer: FIFO preserved
    assert high_water <= 2


@pytest.mark.asyncio
async def test_multi_stage_pipeline_preserves_all_items():
    rng = random.Random(1234)
    raw: asyncio.Queue = asyncio.Queue(maxsize=5)
    parsed: asyncio.Queue = asyncio.Queue(maxsize=5)
    sink: list[dict] = []

    async def fetch():
        for i in range(25):
            await raw.put(f"<doc id={i} words={rng.randint(1, 9)}>")
        await raw.put(None)

    async def parse():
        while (doc := await raw.get()) is not None:
            fields = dict(kv.split("=") for kv in doc.strip("<>").split()[1:])
            await asyncio.sleep(0)
            await parsed.put({k: int(v) for k, v in fields.items()})
        await parsed.put(None)

    async def store():
        while (rec := await parsed.get()) is not None:
            sink.append(rec)

    async with asyncio.timeout(30):
        async with asyncio.TaskGroup() as tg:
            tg.create_task(fetch())
            tg.create_task(parse())
            tg.create_task(store())
    assert [r["id"] for r in sink] == list(range(25))
    assert all(1 <= r["words"] <= 9 for r in sink)


@pytest.mark.asyncio
async def test_get_with_timeout_on_empty_queue_leaves_queue_usable():
    queue: asyncio.Queue[str] = asyncio.Queue()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(queue.get(), timeout=0.05)
    queue.put_nowait("later")
    assert await asyncio.wait_for(queue.get(), timeout=10) == "later"
    assert queue.empty()
