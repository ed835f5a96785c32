import asyncio
import time

import pytest
import pytest_asyncio

from wire import PoolClosed, PoolTimeout
from wire.pool import Pool, StreamConnection

from conftest import EPS


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest_asyncio.fixture
async def make_pool(echo_server):
    pools = []

    def _make(**kwargs):
        pool = Pool(lambda: StreamConnection.open("127.0.0.1", echo_server.port), **kwargs)
        pools.append(pool)
        return pool

    yield _make
    for pool in pools:
        await pool.close()


@pytest.mark.asyncio
async def test_released_connection_is_reused(make_pool):
    pool = make_pool(max_size=2)
    async with pool.connection() as c1:
        assert await c1.request_line("one") == "one"
    async with pool.connection() as c2:
        assert await c2.request_line("two") == "two"
    assert c1 is c2
    assert (pool.created, pool.reused, pool.size, pool.idle) == (1, 1, 1, 1)


@pytest.mark.asyncio
async def test_max_size_makes_the_next_caller_wait(make_pool):
    pool = make_pool(max_size=2)
    a = await pool.acquire()
    b = await pool.acquire()
    waiter = asyncio.create_task(pool.acquire())
    done, _ = await asyncio.wait([waiter], timeout=0.02)
    assert not done  # the pool is full: nothing can satisfy it until a release
    assert pool.size == 2
    await pool.release(a)
    c = await asyncio.wait_for(waiter, 20)
    assert c is a
    await pool.release(b)
    await pool.release(c)
    assert pool.created == 2


@pytest.mark.asyncio
async def test_acquire_timeout(make_pool):
    pool = make_pool(max_size=1)
    held = await pool.acquire()
    t0 = time.perf_counter()
    with pytest.raises(PoolTimeout):
        await pool.acquire(timeout=0.05)
    assert time.perf_counter() - t0 >= 0.05 - EPS
    await pool.release(held)
    async with pool.connection(timeout=20) as again:
        assert again is held


@pytest.mark.asyncio
async def test_idle_connection_expires_on_checkout(make_pool):
    clock = ManualClock()
    pool = make_pool(max_size=2, idle_timeout=30, clock=clock)
    async with pool.connection() as first:
        pass
    clock.now += 29.9
    async with pool.connection() as second:
        assert second is first
    clock.now += 30
    async with pool.connection() as third:
        assert third is not first
        assert await third.request_line("fresh") == "fresh"
    assert (pool.created, pool.expired) == (2, 1)
    assert first.writer.is_closing()


@pytest.mark.asyncio
async def test_prune_closes_only_expired(make_pool):
    clock = ManualClock()
    pool = make_pool(max_size=3, idle_timeout=10, clock=clock)
    conns = [await pool.acquire() for _ in range(3)]
    await pool.release(conns[0])
    clock.now += 6
    await pool.release(conns[1])
    await pool.release(conns[2])
    clock.now += 5
    assert await pool.prune() == 1
    assert pool.idle == 2
    assert conns[0].writer.is_closing() and not conns[1].writer.is_closing()


@pytest.mark.asyncio
async def test_connection_closed_by_server_is_not_handed_out(make_pool):
    pool = make_pool(max_size=1)
    conn = await pool.acquire()
    assert await conn.request_line("QUIT") == "BYE"

    async def until_eof():
        while not conn.reader.at_eof():
            await conn.reader.read(1)  # returns b"" once the server's FIN has arrived

    await asyncio.wait_for(until_eof(), 20)
    await pool.release(conn)
    async with pool.connection() as fresh:
        assert fresh is not conn
        assert await fresh.request_line("ping") == "ping"
    assert pool.discarded == 1 and pool.created == 2


@pytest.mark.asyncio
async def test_error_inside_block_discards_the_connection(make_pool):
    pool = make_pool(max_size=1)
    with pytest.raises(RuntimeError):
        async with pool.connection() as conn:
            conn.writer.write(b"half a request")
            raise RuntimeError("caller failed mid-request")
    assert pool.size == 0 and pool.discarded == 1
    async with pool.connection() as conn2:
        assert conn2 is not conn


@pytest.mark.asyncio
async def test_close_closes_idle_and_refuses_new_checkouts(make_pool):
    pool = make_pool(max_size=2)
    async with pool.connection() as conn:
        pass
    await pool.close()
    assert conn.writer.is_closing()
    with pytest.raises(PoolClosed):
        await pool.acquire()


@pytest.mark.asyncio
async def test_close_wakes_a_waiting_acquire(make_pool):
    pool = make_pool(max_size=1)
    await pool.acquire()
    waiter = asyncio.create_task(pool.acquire())
    await asyncio.sleep(0)
    await pool.close()
    with pytest.raises(PoolClosed):
        await asyncio.wait_for(waiter, 20)


@pytest.mark.asyncio
async def test_many_tasks_share_a_small_pool(make_pool):
    pool = make_pool(max_size=3)
    peak = 0

    async def worker(i):
        nonlocal peak
        async with pool.connection(timeout=20) as conn:
            peak = max(peak, pool.in_use)
            assert await conn.request_line(f"job {i}") == f"job {i}"

    await asyncio.wait_for(asyncio.gather(*(worker(i) for i in range(12))), 20)
    assert peak <= 3
    assert pool.created <= 3
    assert pool.created + pool.reused == 12
