"""µs per hop on a 100-task token ring through asyncio.Queue: the stock loop vs the controlled loop.

Usage: python bench/ring.py [stock|controlled|controlled-nohooks] [hops] -> prints one JSON line.
`controlled` is what a run gets: the controlled loop, the recorder, and the hooks that record every
queue operation (C methods in place of Queue._put, _get, empty and qsize; the count per hop is
printed). `controlled-nohooks` is the loop and the recorder alone. `controlled-traced` adds the line tracer
(every line of user code a step runs is recorded, as in the runs investigate explains).
Each configuration runs in its own process so that neither warms the other's caches.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

TASKS = 100


async def ring(hops: int) -> float:
    queues = [asyncio.Queue() for _ in range(TASKS)]

    async def node(i: int) -> None:
        inbox, outbox = queues[i], queues[(i + 1) % TASKS]
        while True:
            token = await inbox.get()
            if token >= hops:
                await outbox.put(token)
                return
            await outbox.put(token + 1)

    tasks = [asyncio.create_task(node(i)) for i in range(TASKS)]
    await asyncio.sleep(0)
    t0 = time.perf_counter()
    await queues[0].put(0)
    await asyncio.gather(*tasks)
    return time.perf_counter() - t0


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stock"
    hops = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    if mode.startswith("controlled"):
        import affidavit
        from affidavit import _runtime

        _runtime.configure(_runtime.MODE_CONTROLLED, "", 0, mode == "controlled-traced")
        _runtime.recorder_begin(64 << 20)
        if mode == "controlled-nohooks":
            from affidavit.loop import ControlledPolicy

            asyncio.set_event_loop_policy(ControlledPolicy())
        else:
            affidavit.install()
    best = None
    polls = 0
    syncs = 0
    for _ in range(5):
        loop = asyncio.new_event_loop()
        select = loop._selector.select  # type: ignore[attr-defined]

        def counting_select(timeout: object = None) -> object:
            nonlocal polls
            polls += 1
            return select(timeout)

        loop._selector.select = counting_select  # type: ignore[attr-defined]
        try:
            secs = loop.run_until_complete(ring(hops))
        finally:
            loop.close()
        best = secs if best is None else min(best, secs)
        if mode.startswith("controlled"):
            syncs = sum(1 for e in _runtime.events() if e[0] == 11)  # SYNC: a recorded primitive operation
            _runtime.recorder_begin(64 << 20)
    print(json.dumps({"mode": mode, "hops": hops, "us_per_hop": best / hops * 1e6,
                      "selector_polls_per_hop": polls / (5 * hops),
                      "recorded_sync_ops_per_hop": syncs / hops}))


if __name__ == "__main__":
    main()
