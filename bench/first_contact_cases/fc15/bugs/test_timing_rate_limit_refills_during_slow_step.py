"""TIMING THRESHOLD (not a race): a wall-clock token bucket refills mid-test.

Modelled on ProfessionalWiki/MediaWiki-MCP-Server#548 ("refill() ... tops the
bucket up from wall-clock elapsed time.  If more than about a second passes
between the bucket being created and the third request, a token is back")
and ephpm/ephpm#392 (a refill every millisecond "races the clock").

The limiter allows a burst of ``BURST`` requests and refills ``RATE`` tokens
per second from ``time.monotonic()``.  Each request compresses its payload
in a worker thread first.  The test expects request ``BURST + 1`` to be
refused - true only if the burst completes within ``1 / RATE`` seconds of the
bucket's creation.  When the compression steps take longer, a token has
legitimately come back and the request is (correctly) allowed.
"""

import asyncio
import threading
import time
import zlib

import pytest

RATE = 36.0          # one token every ~28 ms
BURST = 3
PAYLOAD = bytes(range(256)) * 4096 * 2   # 2 MiB


class Bucket:
    def __init__(self, rate, burst):
        self.rate, self.burst = rate, burst
        self.tokens = float(burst)
        self.stamp = time.monotonic()
        self.lock = threading.Lock()

    def allow(self):
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            if self.tokens >= 1:
                self.tokens -= 1
                return True
            return False


async def send(bucket, payload):
    body = await asyncio.to_thread(zlib.compress, payload, 6)
    return 200 if bucket.allow() else 429, len(body)


@pytest.mark.asyncio
async def test_request_after_burst_is_refused():
    bucket = Bucket(RATE, BURST)
    statuses = [(await send(bucket, PAYLOAD))[0] for _ in range(BURST + 1)]
    assert statuses == [200] * BURST + [429]
