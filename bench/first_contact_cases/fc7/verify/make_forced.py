"""Create copies of the bug tests with timings/orderings forced into the bad interleaving."""
import pathlib
B = pathlib.Path(__file__).resolve().parent.parent / "bugs"
OUT = pathlib.Path(__file__).resolve().parent
edits = {
    "test_aiohttp_connector_trace_limit.py": [("client(conn, 0.02, 0.005)", "client(conn, 0.0215, 0.005)")],
    "test_anyio_lock_cancelled_handoff.py": [("await asyncio.gather(canceller(), holder_release())", "await asyncio.gather(holder_release(), canceller())")],
    "test_anyio_condition_lost_notify.py": [("await asyncio.sleep(0.04)", "await asyncio.sleep(0.01)")],
    "test_redis_cancel_offbyone.py": [("latency=0.005", "latency=0.2")],
    "test_async_timeout_swallows_cancel.py": [("async with Timeout(0.03):", "async with Timeout(0.01):")],
    "test_aiocache_cached_stale_write.py": [("await asyncio.sleep(0.02)\n        await update_price", "await asyncio.sleep(0.002)\n        await update_price")],
    "test_aiormq_rpc_close_deadlock.py": [("latency=0.005", "latency=0.2")],
    "test_anyio_lock_stale_waiter.py": [("await asyncio.sleep(0.03)\n        await lock.acquire()", "await asyncio.sleep(0.01)\n        await lock.acquire()")],
}
for name, reps in edits.items():
    s = (B / name).read_text()
    for a, b in reps:
        assert a in s, (name, a)
        s = s.replace(a, b)
    (OUT / ("forced_" + name[5:])).write_text(s.replace("def test_", "def test_forced_"))
print("ok")
