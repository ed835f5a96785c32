"""Driver: a sqlite3 connection owned by one background thread."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time

import pytest

from bridge import BridgeClosed, Driver
from conftest import LONG


async def _make_table(driver):
    await driver.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)")


@pytest.mark.asyncio
async def test_insert_and_fetch(driver):
    await _make_table(driver)
    await driver.execute("INSERT INTO kv VALUES (?, ?)", ("a", 1))
    await driver.execute("INSERT INTO kv VALUES (?, ?)", ("b", 2))
    rows = await driver.fetchall("SELECT k, v FROM kv ORDER BY k")
    assert rows == [("a", 1), ("b", 2)]
    assert await driver.fetchone("SELECT v FROM kv WHERE k = ?", ("b",)) == (2,)


@pytest.mark.asyncio
async def test_all_work_runs_on_the_driver_thread(driver):
    idents = await asyncio.gather(*(driver.run(lambda _c: threading.get_ident())
                                    for _ in range(10)))
    assert set(idents) == {driver.thread_ident}
    assert driver.thread_ident != threading.get_ident()


@pytest.mark.asyncio
async def test_concurrent_inserts_from_many_tasks(driver):
    await _make_table(driver)
    await asyncio.gather(*(driver.execute("INSERT INTO kv VALUES (?, ?)", (f"k{i}", i))
                           for i in range(50)))
    assert await driver.fetchone("SELECT COUNT(*), SUM(v) FROM kv") == (50, sum(range(50)))


@pytest.mark.asyncio
async def test_sql_error_propagates_and_driver_survives(driver):
    with pytest.raises(sqlite3.OperationalError):
        await driver.execute("SELECT * FROM missing_table")
    assert await driver.fetchone("SELECT 1 + 1") == (2,)


@pytest.mark.asyncio
async def test_transaction_rolls_back_on_error(driver):
    await _make_table(driver)
    with pytest.raises(sqlite3.IntegrityError):
        await driver.transaction([
            ("INSERT INTO kv VALUES (?, ?)", ("x", 1)),
            ("INSERT INTO kv VALUES (?, ?)", ("x", 2)),  # duplicate key
        ])
    assert await driver.fetchall("SELECT * FROM kv") == []
    await driver.transaction([("INSERT INTO kv VALUES (?, ?)", ("y", 3))])
    assert await driver.fetchall("SELECT * FROM kv") == [("y", 3)]


@pytest.mark.asyncio
async def test_executemany_counts_rows(driver):
    await _make_table(driver)
    n = await driver.executemany("INSERT INTO kv VALUES (?, ?)",
                                 ((f"r{i}", i * i) for i in range(25)))
    assert n == 25
    assert await driver.fetchone("SELECT v FROM kv WHERE k = 'r7'") == (49,)


@pytest.mark.asyncio
async def test_timed_out_request_is_dropped_quietly(driver, loop_errors):
    release = threading.Event()

    def slow(_conn):
        release.wait(LONG)
        return "late"

    t0 = time.monotonic()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(driver.run(slow), 0.05)
    assert time.monotonic() - t0 >= 0.05 - 0.005
    release.set()
    # the late result is discarded; the next request is answered normally
    assert await asyncio.wait_for(driver.fetchone("SELECT 42"), LONG) == (42,)
    assert driver.requests_served >= 2


@pytest.mark.asyncio
async def test_concurrent_close_is_idempotent():
    d = Driver(name="bridge-driver-close")
    await d.start()
    await d.execute("CREATE TABLE t (x)")
    await asyncio.gather(d.close(), d.close(), d.close())
    assert not d.running
    with pytest.raises(BridgeClosed):
        await d.execute("INSERT INTO t VALUES (1)")
    await d.close()


@pytest.mark.asyncio
async def test_queued_requests_finish_before_close():
    async with Driver(name="bridge-driver-ctx") as d:
        await d.execute("CREATE TABLE t (x)")
        inserts = [asyncio.create_task(d.execute("INSERT INTO t VALUES (?)", (i,)))
                   for i in range(20)]
        await asyncio.sleep(0)  # let every insert enqueue its request
        count = asyncio.create_task(d.fetchone("SELECT COUNT(*) FROM t"))
        await asyncio.sleep(0)
        closing = asyncio.create_task(d.close())
        await asyncio.wait_for(asyncio.gather(*inserts), LONG)
        assert await asyncio.wait_for(count, LONG) == (20,)
        await asyncio.wait_for(closing, LONG)
    assert not d.running
