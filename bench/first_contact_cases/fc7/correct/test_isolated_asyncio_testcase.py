"""unittest.IsolatedAsyncioTestCase collected and run by pytest."""
import asyncio
import time
import unittest


class ResourceTests(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.log = []
        self.queue = asyncio.Queue()
        self.worker = asyncio.create_task(self._consume())
        self.addAsyncCleanup(self._cleanup)

    async def _consume(self):
        while True:
            item = await self.queue.get()
            await asyncio.sleep(0.005)
            self.log.append(item)
            self.queue.task_done()

    async def _cleanup(self):
        self.worker.cancel()
        try:
            await self.worker
        except asyncio.CancelledError:
            pass

    async def test_queue_drains(self):
        for i in range(5):
            self.queue.put_nowait(i)
        await asyncio.wait_for(self.queue.join(), 5)
        self.assertEqual(self.log, [0, 1, 2, 3, 4])

    async def test_real_time_passes(self):
        t0 = time.monotonic()
        await asyncio.sleep(0.05)
        self.assertGreaterEqual(time.monotonic() - t0, 0.049)

    async def test_to_thread_inside_testcase(self):
        r = await asyncio.to_thread(lambda: (time.sleep(0.02), "t")[1])
        self.assertEqual(r, "t")

    def test_plain_sync_method_has_no_running_loop(self):
        with self.assertRaises(RuntimeError):
            asyncio.get_running_loop()


if __name__ == "__main__":
    unittest.main()
