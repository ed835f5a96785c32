"""Model of https://github.com/python/asyncio/issues/343 ("Race condition in
asyncio.wait_for()": an item put into a queue was lost when the consumer's
``wait_for(q.get(), timeout)`` timed out at the same moment), whose root is the
hand-off queue design of https://bugs.python.org/issue23812 (fix:
https://github.com/python/asyncio/pull/256): ``put`` handed the item directly to a
waiting getter's future, so cancelling that getter after the hand-off dropped it.

``HandoffChannel`` re-implements that queue. The consumer polls it with stock
``asyncio.wait_for(ch.get(), 0.5)`` and counts idle timeouts. The producer puts
one order at 0.1 s. Under natural timing the getter receives it long before the
timeout. If one loop step takes long enough that the producer's wake-up and the
consumer's timeout are processed in the same iteration, the producer hands the
order to the getter and ``wait_for`` then cancels the getter task before it
resumes, so the order is lost.
"""
import asyncio
import collections

import pytest


class HandoffChannel:
    def __init__(self):
        self._items = collections.deque()
        self._getters = collections.deque()

    def put_nowait(self, item):
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(item)  # the item now lives only in the future
                return
        self._items.append(item)

    async def get(self):
        if self._items:
            return self._items.popleft()
        getter = asyncio.get_running_loop().create_future()
        self._getters.append(getter)
        return await getter


@pytest.mark.asyncio
async def test_order_reaches_consumer():
    ch = HandoffChannel()
    received = []
    idle = [0]

    async def consumer():
        while True:
            try:
                received.append(await asyncio.wait_for(ch.get(), 0.5))
            except asyncio.TimeoutError:
                idle[0] += 1

    async def producer():
        await asyncio.sleep(0.1)
        ch.put_nowait("order-1")

    c = asyncio.create_task(consumer())
    p = asyncio.create_task(producer())
    await p
    try:
        async with asyncio.timeout(3):
            while not received:
                await asyncio.sleep(0.01)
    except TimeoutError:
        pass
    finally:
        c.cancel()
        await asyncio.gather(c, return_exceptions=True)
    assert received == ["order-1"], f"order lost (idle timeouts: {idle[0]})"
