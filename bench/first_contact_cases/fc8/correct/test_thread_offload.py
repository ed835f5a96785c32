"""Thread offloading tests, modelled on libraries that wrap blocking drivers
(sqlite3, file I/O, DNS resolution, image codecs) for asyncio.

Covers ``loop.run_in_executor`` with a private ``ThreadPoolExecutor``,
``asyncio.to_thread``, ``asyncio.wrap_future`` on ``concurrent.futures``
futures, a plain ``threading.Thread`` that sets a flag polled from the loop,
and ``loop.call_soon_threadsafe`` used by a worker thread to deliver results.
"""

import asyncio
import concurrent.futures
import sqlite3
import threading
import time

import pytest
import pytest_asyncio


@pytest_asyncio.fixture
async def executor():
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="fc8-io")
    yield pool
    pool.shutdown(wait=True)


def blocking_hash(data: bytes, rounds: int) -> str:
    import hashlib

    digest = data
    for _ in range(rounds):
        digest = hashlib.sha256(digest).digest()
    return digest.hex()


@pytest.mark.asyncio
async def test_run_in_executor_returns_value_and_runs_off_loop(executor):
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()

    def work():
        return threading.get_ident(), blocking_hash(b"seed", 2000)

    tid, digest = await asyncio.wait_for(loop.run_in_executor(executor, work), timeout=30)
    assert tid != loop_thread
    assert digest == blocking_hash(b"seed", 2000)


@pytest.mark.asyncio
async def test_to_thread_sqlite_roundtrip(tmp_path):
    db = tmp_path / "app.db"

    def write_rows(n):
        with sqlite3.connect(db) as conn:
            conn.execute("create table if not exists items (id integer primary key, name text)")
            conn.executemany("insert into items (name) values (?)", [(f"item{i}",) for i in range(n)])
        return n

    def count_rows():
        with sqlite3.connect(db) as conn:
            return conn.execute("select count(*) from items").fetchone()[0]

    assert await asyncio.to_thread(write_rows, 25) == 25
    assert await asyncio.to_thread(count_rows) == 25


@pytest.mark.asyncio
async def test_thread_sets_flag_polled_by_loop():
    done = threading.Event()
    result = {}

    def worker():
        time.sleep(0.05)
        result["value"] = sum(range(1000))
        done.set()

    t = threading.Thread(target=worker, daemon=True)
    t.start()
    start = time.monotonic()
    while not done.is_set():
        await asyncio.sleep(0.01)
        assert time.monotonic() - start < 20, "worker thread never finished"
    t.join(timeout=10)
    assert not t.is_alive()
    assert result["value"] == 499500


@pytest.mark.asyncio
async def test_call_soon_threadsafe_delivers_results_in_order():
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[int | None] = asyncio.Queue()

    def producer():
        for i in range(50):
            loop.call_soon_threadsafe(queue.put_nowait, i)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    t = threading.Thread(target=producer)
    t.start()
    received = []
    while True:
        item = await asyncio.wait_for(queue.get(), timeout=20)
        if item is None:
            break
        received.append(item)
    t.join(timeout=10)
    assert received == list(range(50))


@pytest.mark.asyncio
async def test_wrap_future_from_concurrent_futures(executor):
    cf = executor.submit(blocking_hash, b"x", 100)
    assert isinstance(cf, concurrent.futures.Future)
    value = await asyncio.wait_for(asyncio.wrap_future(cf), timeout=30)
    assert value == blocking_hash(b"x", 100)
    assert cf.done()
