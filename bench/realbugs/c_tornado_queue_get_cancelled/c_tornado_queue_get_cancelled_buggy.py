"""A queue shaped like tornado.queues.Queue before tornadoweb/tornado#3689.

`put_nowait()` hands the item straight to the oldest waiting getter by resolving its future. A getter
whose task is cancelled after that and before it resumes (a timeout around `get()`) raises
CancelledError: the item it was handed is gone from the queue and never reaches anyone.
"""

import asyncio
import collections


class Queue:
    def __init__(self) -> None:
        self._items: collections.deque = collections.deque()
        self._getters: collections.deque = collections.deque()

    def qsize(self) -> int:
        return len(self._items)

    def put_nowait(self, item: object) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(item)
                return
        self._items.append(item)

    async def get(self) -> object:
        if self._items:
            return self._items.popleft()
        getter = asyncio.get_running_loop().create_future()
        self._getters.append(getter)
        try:
            return await getter
        except asyncio.CancelledError:
            if not getter.done():
                getter.cancel()
            raise
