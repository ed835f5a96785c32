"""The same queue after the fix: a cancelled getter returns an item it was already handed."""

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
            elif not getter.cancelled():
                # The item was handed to us and cancellation won the race: give it back.
                self._give_back(getter.result())
            raise

    def _give_back(self, item: object) -> None:
        for getter in self._getters:
            if not getter.done():
                self._getters.remove(getter)
                getter.set_result(item)
                return
        self._items.appendleft(item)
