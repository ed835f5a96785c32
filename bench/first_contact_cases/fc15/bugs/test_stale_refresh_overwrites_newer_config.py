"""A timed-out executor job keeps running and overwrites newer state.

Modelled on oraios/serena#2063 (after a timeout the next task runs while the
previous worker "is still running" and touching shared state), the review of
datarobot-oss/datarobot-genai#225 ("When asyncio.wait_for times out, the
executor thread continues running ... the still-running thread may write to
the shared ... variables") and huggingface/smolagents#2199 ("timed-out
workers mutate later executions' live state").

``ConfigCache.refresh`` runs ``_fetch_and_store`` in the default executor
under ``wait_for``.  The worker stores the fetched config itself, in the
thread.  When the primary source is slow the refresh times out and the cache
falls back to the mirror - but the primary job is still sleeping in its
thread, and when it wakes it stores its now-stale config over the mirror's.
"""

import asyncio
import threading
import time

import pytest

PRIMARY_FETCH = 0.121    # slow source
REFRESH_TIMEOUT = 0.10
MIRROR_FETCH = 0.02      # fast fallback


class ConfigCache:
    def __init__(self):
        self.current = None
        self.jobs_finished = 0
        self._lock = threading.Lock()

    def _fetch_and_store(self, source, delay):
        time.sleep(delay)                         # network fetch
        cfg = {"source": source, "fetched": time.monotonic()}
        with self._lock:
            self.current = cfg                    # BUG: written by the worker,
            self.jobs_finished += 1               # even if the caller gave up
        return cfg

    async def refresh(self, source, delay, timeout):
        loop = asyncio.get_running_loop()
        return await asyncio.wait_for(
            loop.run_in_executor(None, self._fetch_and_store, source, delay),
            timeout)

    async def refresh_with_fallback(self):
        try:
            return await self.refresh("primary", PRIMARY_FETCH, REFRESH_TIMEOUT)
        except asyncio.TimeoutError:
            return await self.refresh("mirror", MIRROR_FETCH, 5.0)


@pytest.mark.asyncio
async def test_cache_holds_the_config_that_refresh_returned():
    cache = ConfigCache()
    returned = await cache.refresh_with_fallback()

    async def settled():
        while cache.jobs_finished < 2 and returned["source"] == "mirror":
            await asyncio.sleep(0.005)
    await asyncio.wait_for(settled(), 5)          # every worker has finished
    assert cache.current["source"] == returned["source"], (
        f"refresh returned {returned['source']!r} "
        f"but cache now holds {cache.current['source']!r}")
