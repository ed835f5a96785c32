import asyncio
import os

import pytest

from app.store import FileStore, StoreClosed

pytestmark = pytest.mark.asyncio


async def test_put_get_delete(store):
    assert await store.get("a") is None
    await store.put("a", {"n": 1})
    assert await store.get("a") == {"n": 1}
    assert await store.delete("a") is True
    assert await store.delete("a") is False
    assert await store.get("a", "dflt") == "dflt"


async def test_compare_and_set(store):
    assert await store.compare_and_set("k", None, 1) is True       # absent -> 1
    assert await store.compare_and_set("k", None, 2) is False      # not absent any more
    assert await store.compare_and_set("k", 1, 2) is True
    assert await store.compare_and_set("k", 2, None) is True       # delete
    assert await store.get("k") is None


async def test_keys_by_prefix(store):
    for k in ["user:2", "user:1", "job:1"]:
        await store.put(k, k)
    assert await store.keys("user:") == ["user:1", "user:2"]
    assert await store.keys() == ["job:1", "user:1", "user:2"]


async def test_closed_store_refuses_everything(store):
    await store.close()
    with pytest.raises(StoreClosed):
        await store.get("a")
    with pytest.raises(StoreClosed):
        await store.put("a", 1)


async def test_concurrent_writers_all_land(store):
    await asyncio.wait_for(asyncio.gather(*(store.put(f"k{i}", i) for i in range(50))), 20)
    assert len(await store.keys("k")) == 50
    assert await store.get("k49") == 49


async def test_file_store_replays_its_log(tmp_path):
    path = tmp_path / "data.log"
    s = await FileStore(path).open()
    await s.put("a", 1)
    await s.put("b", [1, 2])
    await s.delete("a")
    await s.close()
    again = await FileStore(path).open()
    try:
        assert await again.keys() == ["b"]
        assert await again.get("b") == [1, 2]
    finally:
        await again.close()


async def test_compaction_rewrites_the_log(tmp_path):
    path = tmp_path / "data.log"
    s = await FileStore(path).open()
    for i in range(20):
        await s.put("counter", i)
    before = os.path.getsize(path)
    await s.compact()
    await s.put("other", True)
    await s.close()
    assert os.path.getsize(path) < before
    assert not os.path.exists(str(path) + ".tmp")
    again = await FileStore(path).open()
    try:
        assert (await again.get("counter"), await again.get("other")) == (19, True)
    finally:
        await again.close()


async def test_torn_tail_is_ignored_but_corruption_is_not(tmp_path):
    torn = tmp_path / "torn.log"
    torn.write_text('{"k": "a", "op": "put", "v": 1}\n{"k": "b", "op": "pu')
    s = await FileStore(torn).open()
    assert await s.keys() == ["a"]
    await s.close()
    bad = tmp_path / "bad.log"
    bad.write_text('{"k": "a", "op": "put", "v": 1}\nnot json\n{"k": "b", "op": "put", "v": 2}\n')
    with pytest.raises(ValueError, match="bad.log:2"):
        await FileStore(bad).open()
