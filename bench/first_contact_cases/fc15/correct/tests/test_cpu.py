"""CPU-heavy helpers: hashing, compression and JSON parsing of ~300 KB."""

from __future__ import annotations

import asyncio
import time

import pytest

from bridge import Heartbeat
from bridge.cpu import (Envelope, compress, decompress, digest, digest_async,
                        encode_lines, open_envelope, parse_cooperatively, parse_lines)
from conftest import LONG, wait_until


@pytest.mark.asyncio
async def test_envelope_round_trip(records, envelope):
    assert 200_000 < len(encode_lines(records)) < 600_000  # a few hundred KB
    assert envelope.count == len(records)
    assert len(envelope.body) < len(encode_lines(records)) // 2
    assert await asyncio.wait_for(open_envelope(envelope), LONG) == records


@pytest.mark.asyncio
async def test_digest_mismatch_is_rejected(envelope):
    forged = Envelope(body=envelope.body, sha256="0" * 64, count=envelope.count)
    with pytest.raises(ValueError, match="digest"):
        await open_envelope(forged)


def test_decompress_refuses_oversized_output(records):
    body = compress(encode_lines(records))
    with pytest.raises(ValueError, match="exceeds"):
        decompress(body, max_size=10_000)


@pytest.mark.asyncio
async def test_threaded_digests_match_sequential(records):
    blobs = [encode_lines(records[i::4]) for i in range(4)]
    threaded = await asyncio.gather(*(digest_async(b) for b in blobs))
    assert threaded == [digest(b) for b in blobs]
    assert await digest_async(blobs[0], "md5") == digest(blobs[0], "md5")


@pytest.mark.asyncio
async def test_cooperative_parse_lets_other_tasks_run(records):
    blob = encode_lines(records)
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    t = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    parsed = await parse_cooperatively(blob, batch=200)
    t.cancel()
    assert parsed == records
    # 15 batches, each followed by a yield in which the ticker runs once
    assert ticks >= 10


@pytest.mark.asyncio
async def test_blocking_parse_on_the_loop_shows_up_as_a_heartbeat_gap(records):
    blob = encode_lines(records) * 3
    async with Heartbeat(0.005) as hb:
        await wait_until(lambda: len(hb.beats) >= 2)
        t0 = time.monotonic()
        parse_lines(blob)  # deliberately on the loop thread, no yields
        blocked = time.monotonic() - t0
        n = len(hb.beats)
        await wait_until(lambda: len(hb.beats) > n)
    # a beat happened before the parse and another after it
    assert hb.max_gap >= blocked


@pytest.mark.asyncio
async def test_offloaded_compression_keeps_loop_responsive(records):
    blob = encode_lines(records) * 4  # about 1.2 MB
    async with Heartbeat(0.01) as hb:
        await wait_until(lambda: len(hb.beats) >= 1)
        body = await asyncio.to_thread(compress, blob, 9)
        await wait_until(lambda: len(hb.beats) >= 3)
    assert decompress(body) == blob
    # zlib releases the GIL; very generous bound because this suite must also
    # pass at nice 19 on a saturated 2-core machine
    assert hb.max_gap < 10.0
