"""TIMING THRESHOLD (not a race): JSON parsing on the loop delays a heartbeat.

Modelled on amqp-node/amqplib#261 ("CPU-intensive tasks cause heartbeat to
stop firing ... missed heartbeats from client, timeout") and
Chia-Network/chia-blockchain#13885 (heartbeat raised because "tasks don't
yield").

A client sends a heartbeat every ``HEARTBEAT`` seconds; the peer declares it
dead if two heartbeats are more than ``PEER_TIMEOUT`` apart.  Between
heartbeats the application parses a ~600 KB batch of JSON lines *on the
loop* (no ``to_thread``, no yields).  The parse usually fits into the peer's
tolerance, but not always: the outcome depends on how long one CPU step takes
on this machine, not on any ordering.
"""

import asyncio
import json
import random
import time

import pytest

HEARTBEAT = 0.01
PEER_TIMEOUT = 0.055
BATCHES = 4


def make_batch(seed):
    rng = random.Random(seed)
    return b"\n".join(
        json.dumps({"id": i, "v": rng.random(), "tags": ["a", "b", "c"],
                    "name": f"item-{i:06d}"}).encode()
        for i in range(6000))


@pytest.mark.asyncio
async def test_peer_never_sees_a_missed_heartbeat():
    beats = []

    async def heartbeat():
        while True:
            beats.append(time.monotonic())
            await asyncio.sleep(HEARTBEAT)

    batches = [make_batch(s) for s in range(BATCHES)]
    hb = asyncio.create_task(heartbeat())
    await asyncio.sleep(HEARTBEAT * 2)
    total = 0
    for blob in batches:
        total += len([json.loads(line) for line in blob.split(b"\n")])  # on the loop
        await asyncio.sleep(HEARTBEAT * 2)
    hb.cancel()
    gaps = [b - a for a, b in zip(beats, beats[1:])]
    assert total == 6000 * BATCHES
    assert max(gaps) < PEER_TIMEOUT, f"peer saw a {max(gaps):.3f}s silence"
