"""TIMING THRESHOLD (not a race): a checksum step under a tight ``wait_for``.

Modelled on agronholm/anyio#1265's second half ("timing flakiness on aarch64
(test_deadline_moved fails)") and rust-lang/crates.io#6952 ("the hardcoded
time limit sometimes naturally expiring ... service=737ms in the logs of
failing runs but service=9ms when it succeeds").

``verify_segments`` checks each segment of an upload in the default executor
(sha256 + crc32 + zlib round trip, about 2 MB per segment) and gives each
step ``STEP_TIMEOUT`` seconds.  The deadline was picked on a fast, idle
machine; it is close to the step's typical duration, so ordinary scheduling
noise or a busy neighbour pushes some step over it.  Nothing is interleaved
wrongly - the step is just slower than the number in the test.
"""

import asyncio
import hashlib
import zlib

import pytest

SEGMENTS = 6
SEGMENT = bytes(range(256)) * (2 * 4096)     # 2 MiB, compressible
STEP_TIMEOUT = 0.016


def check_segment(data):
    digest = hashlib.sha256(data).hexdigest()
    crc = zlib.crc32(data)
    packed = zlib.compress(data, 1)
    assert zlib.decompress(packed) == data
    return digest, crc, len(packed)


async def verify_segments():
    loop = asyncio.get_running_loop()
    out = []
    for _ in range(SEGMENTS):
        out.append(await asyncio.wait_for(
            loop.run_in_executor(None, check_segment, SEGMENT), STEP_TIMEOUT))
    return out


@pytest.mark.asyncio
async def test_upload_verification_meets_deadline():
    results = await verify_segments()
    assert len({r[0] for r in results}) == 1
