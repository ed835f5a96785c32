import asyncio

import pytest

from app import metrics
from app.batcher import BatchError, DataLoader

pytestmark = pytest.mark.asyncio


class Backend:
    def __init__(self, fail_keys=()):
        self.batches = []
        self.fail_keys = set(fail_keys)

    async def __call__(self, keys):
        self.batches.append(list(keys))
        await asyncio.sleep(0)
        return [KeyError(k) if k in self.fail_keys else k * 10 for k in keys]


async def test_loads_in_one_tick_form_one_batch():
    backend = Backend()
    loader = DataLoader(backend)
    assert await asyncio.wait_for(loader.load_many([3, 1, 2]), 20) == [30, 10, 20]
    assert backend.batches == [[3, 1, 2]]


async def test_max_batch_splits_in_order():
    backend = Backend()
    loader = DataLoader(backend, max_batch=2)
    assert await asyncio.wait_for(loader.load_many([1, 2, 3, 4, 5]), 20) == [10, 20, 30, 40, 50]
    assert backend.batches == [[1, 2], [3, 4], [5]]
    assert metrics.get("loader.batches") == 3


async def test_repeated_keys_are_loaded_once_and_cached():
    backend = Backend()
    loader = DataLoader(backend)
    a, b = loader.load(1), loader.load(1)
    assert a is b
    assert await asyncio.wait_for(a, 20) == 10
    assert await asyncio.wait_for(loader.load(1), 20) == 10
    assert backend.batches == [[1]]


async def test_per_key_errors_are_not_cached():
    backend = Backend(fail_keys={2})
    loader = DataLoader(backend)
    results = await asyncio.wait_for(asyncio.gather(loader.load(1), loader.load(2), return_exceptions=True), 20)
    assert results[0] == 10 and isinstance(results[1], KeyError)
    backend.fail_keys.clear()
    assert await asyncio.wait_for(loader.load(2), 20) == 20
    assert backend.batches == [[1, 2], [2]]


async def test_batch_failures_reach_every_key():
    async def broken(keys):
        raise ConnectionError("db gone")

    async def short(keys):
        return keys[:-1]

    for fn, exc_type in ((broken, ConnectionError), (short, BatchError)):
        loader = DataLoader(fn)
        results = await asyncio.wait_for(
            asyncio.gather(loader.load(1), loader.load(2), return_exceptions=True), 20)
        assert [type(r) for r in results] == [exc_type, exc_type]
    assert "1 values for 2 keys" in str(results[0])


async def test_separate_ticks_make_separate_batches():
    backend = Backend()
    loader = DataLoader(backend)
    for k in (1, 2, 3):
        assert await asyncio.wait_for(loader.load(k), 20) == k * 10
    assert backend.batches == [[1], [2], [3]]


async def test_without_cache_duplicates_are_sent():
    backend = Backend()
    loader = DataLoader(backend, cache=False)
    assert await asyncio.wait_for(loader.load_many([4, 4]), 20) == [40, 40]
    assert backend.batches == [[4, 4]]
