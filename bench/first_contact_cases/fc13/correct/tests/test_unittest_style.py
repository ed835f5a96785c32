"""Older-style tests: unittest.IsolatedAsyncioTestCase and loops driven by hand."""

import asyncio
import time
import unittest

from pacer import TokenBucket, Watchdog, run_blocking

EPS = 0.010


class TestLimiterIsolated(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.bucket = TokenBucket(rate=50, capacity=1)
        self.watchdog = Watchdog(0.03).start()

    async def asyncTearDown(self):
        await self.watchdog.stop()

    async def test_bucket_lower_bound(self):
        start = time.monotonic()
        for _ in range(4):
            await self.bucket.acquire()
        self.assertGreaterEqual(time.monotonic() - start, 3 / 50 - EPS)

    async def test_watchdog_fires(self):
        t0 = self.watchdog.last_beat
        await asyncio.wait_for(self.watchdog.fired.wait(), 5)
        self.assertGreaterEqual(self.watchdog.fired_at[0] - t0, 0.03 - EPS)


def _run(main):
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()


def test_hand_driven_loop_rate_limit():
    async def main():
        loop = asyncio.get_running_loop()
        bucket = TokenBucket(rate=100, capacity=1)
        t0 = loop.time()
        for _ in range(5):
            await bucket.acquire()
        return loop.time() - t0

    assert _run(main) >= 4 / 100 - EPS


def test_hand_driven_loop_blocking_work():
    def blocking(x):
        time.sleep(0.02)
        return x + 1

    async def main():
        return await asyncio.gather(*(run_blocking(blocking, i) for i in range(3)))

    start = time.perf_counter()
    assert _run(main) == [1, 2, 3]
    assert time.perf_counter() - start >= 0.02 - EPS
