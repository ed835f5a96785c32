"""Model of https://github.com/python/cpython/issues/76865 (bpo-32684,
fixed by https://github.com/python/cpython/pull/7209):
``gather(..., return_exceptions=True)`` swallowed the cancellation of the task
awaiting it. Cancelling the gather cancelled the children, their CancelledErrors
were collected as ordinary results, and the awaiting task resumed with a list
instead of being cancelled.

``legacy_gather`` re-implements the pre-3.7 behaviour. A health poller gathers
three probes (0.1 s each) with ``return_exceptions=True``, then sleeps 1 s between
rounds. Shutdown cancels the poller at 0.5 s. Under natural timing the cancel
lands in the sleep and stops the poller. If one loop step takes long enough that
the probes' wake-ups and the shutdown are processed in the same iteration, the
cancel lands on the gather, is swallowed, and the poller keeps running.
"""
import asyncio

import pytest


class _LegacyGatheringFuture(asyncio.Future):
    def __init__(self, children, *, loop):
        super().__init__(loop=loop)
        self._children = children

    def cancel(self, msg=None):
        if self.done():
            return False
        ret = False
        for child in self._children:
            if child.cancel(msg):
                ret = True
        return ret  # the gathering future itself is not marked cancelled


def legacy_gather(*aws, return_exceptions=False):
    loop = asyncio.get_running_loop()
    children = [asyncio.ensure_future(a) for a in aws]
    outer = _LegacyGatheringFuture(children, loop=loop)
    results = [None] * len(children)
    remaining = [len(children)]

    def on_done(i, fut):
        if outer.done():
            if not fut.cancelled():
                fut.exception()
            return
        if fut.cancelled():
            res = asyncio.CancelledError()
            if not return_exceptions:
                outer.set_exception(res)
                return
        elif fut.exception() is not None:
            res = fut.exception()
            if not return_exceptions:
                outer.set_exception(res)
                return
        else:
            res = fut.result()
        results[i] = res
        remaining[0] -= 1
        if remaining[0] == 0:
            outer.set_result(results)

    for i, child in enumerate(children):
        child.add_done_callback(lambda f, i=i: on_done(i, f))
    return outer


async def probe(host):
    await asyncio.sleep(0.1)
    return f"{host} up"


async def health_poller(rounds):
    while True:
        results = await legacy_gather(*(probe(h) for h in ("db", "cache", "queue")), return_exceptions=True)
        rounds.append(results)
        await asyncio.sleep(1.0)


@pytest.mark.asyncio
async def test_shutdown_stops_the_poller():
    loop = asyncio.get_running_loop()
    rounds = []
    poller = asyncio.create_task(health_poller(rounds))
    loop.call_later(0.5, poller.cancel)
    done, _ = await asyncio.wait([poller], timeout=2.0)
    stopped = poller in done
    poller.cancel()
    await asyncio.gather(poller, return_exceptions=True)
    assert stopped and len(rounds) == 1, f"shutdown swallowed; poller kept running, rounds={rounds}"
