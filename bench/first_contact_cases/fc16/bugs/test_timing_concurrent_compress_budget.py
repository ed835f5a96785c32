"""Three concurrent compressions must finish inside a tight wall-clock budget.

Modelled on Smart-AI-Memory/attune-ai#1083 ("widen concurrent-timeout test
margin to de-flake CI": three concurrent coroutines ran under a 0.2 s timeout
that event-loop starvation on a contended runner sometimes exceeded; the fix
widened the budget to 1 s and kept the assertion) and on Guido van Rossum's
remark in python/cpython#97546 that 0.1 s / 0.01 s timeouts in tests flake.

Each of three uploads compresses its payload in asyncio.to_thread; the test
puts the whole gather under asyncio.timeout(BUDGET).  Three threads share two
cores, so the total time varies from run to run and sometimes crosses the
budget.  Nothing is raced; the budget is simply too close to the work.

Kind: threshold (pure timing; a slow step crosses a fixed timeout).
"""
import asyncio
import json
import zlib

import pytest

BUDGET = 0.026
PAYLOAD = json.dumps(
    [{"i": i, "name": f"item{i}", "tags": ["a", "b", str(i % 7)], "v": i * 1.5} for i in range(20000)]
).encode()


async def upload(name):
    blob = await asyncio.to_thread(zlib.compress, PAYLOAD, 6)
    return name, len(blob)


@pytest.mark.asyncio
async def test_three_uploads_fit_the_budget():
    async with asyncio.timeout(BUDGET):
        results = await asyncio.gather(*(upload(f"part-{i}") for i in range(3)))
    assert [name for name, _ in results] == ["part-0", "part-1", "part-2"]
    assert all(size < len(PAYLOAD) // 2 for _, size in results)
