"""Model of https://github.com/python/asyncio/issues/270 ("Does asyncio.Semaphore
have the same bug as asyncio.Queue?") and its later recurrence
https://github.com/python/cpython/issues/90155 ("asyncio.Semaphore waiters deque
doesn't work").

A download limiter written like the old semaphore: release() wakes exactly one
waiter; a waiter that was woken but is cancelled before it runs just re-raises,
without passing the wake-up on. The permit stays free while the other waiters
sleep.

Limit 1. Holder H downloads for 0.3 s. W1 (an optional thumbnail) and W2 (the
main file) queue behind it; a watchdog task gives up on W1 at 0.8 s. Natural
timing: H releases at 0.3 s, W1 runs, W2 runs, the watchdog finds W1 finished.
Bad interleaving: the loop is busy across 0.3 s and 0.8 s (e.g. from 0.05 s to
0.9 s): H's release wakes W1, the watchdog cancels W1 in the same iteration,
and W2 is never woken.
"""
import asyncio
import collections

import pytest

HOLD_TIME = 0.3
WATCHDOG_AT = 0.8


class DownloadLimiter:
    def __init__(self, value):
        self._value = value
        self._waiters = collections.deque()

    async def acquire(self):
        while self._value <= 0:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except BaseException:
                fut.cancel()
                # the fix would pass a consumed wake-up on here
                raise
        self._value -= 1

    def release(self):
        self._value += 1
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                break

    async def __aenter__(self):
        await self.acquire()

    async def __aexit__(self, *exc):
        self.release()


async def download(limiter, name, seconds, log):
    async with limiter:
        await asyncio.sleep(seconds)
        log.append(name)


async def watchdog(task):
    await asyncio.sleep(WATCHDOG_AT)
    if not task.done():
        task.cancel()


@pytest.mark.asyncio
async def test_main_download_finishes_when_optional_one_is_dropped():
    limiter = DownloadLimiter(1)
    log = []
    h = asyncio.create_task(download(limiter, "H", HOLD_TIME, log))
    await asyncio.sleep(0.01)
    w1 = asyncio.create_task(download(limiter, "thumbnail", 0.01, log))
    await asyncio.sleep(0.01)
    w2 = asyncio.create_task(download(limiter, "main", 0.01, log))
    dog = asyncio.create_task(watchdog(w1))
    try:
        done, _ = await asyncio.wait({w2}, timeout=WATCHDOG_AT + 2)
        assert w2 in done, (f"main download starved with a free permit "
                            f"(value={limiter._value}, log={log})")
        assert log[0] == "H" and log[-1] == "main"
    finally:
        for t in (h, w1, w2, dog):
            t.cancel()
        await asyncio.gather(h, w1, w2, dog, return_exceptions=True)
