"""The same commander after the fix: the worker checks its own cancel requests (3.11+)."""

import asyncio
import random


class Item:
    def __init__(self, frame: bytes) -> None:
        self.frame = frame
        self.future: asyncio.Future = asyncio.get_running_loop().create_future()


class Commander:
    def __init__(self) -> None:
        self._queue: asyncio.Queue = asyncio.Queue()
        self._worker: asyncio.Task = asyncio.create_task(self._loop())

    async def _execute(self, item: Item) -> bytes:
        await asyncio.sleep(random.uniform(0, 0.004))  # the radio answers on the serial line
        return b"ACK " + item.frame

    async def _loop(self) -> None:
        while True:
            item = await self._queue.get()
            execute_task = asyncio.create_task(self._execute(item))

            def propagate_cancel(fut: asyncio.Future, task: asyncio.Task = execute_task) -> None:
                if fut.cancelled():
                    task.cancel()

            item.future.add_done_callback(propagate_cancel)
            try:
                result = await execute_task
            except asyncio.CancelledError:
                # A pending cancel request on the worker itself means stop(), whatever the item says.
                if item.future.cancelled() and not asyncio.current_task().cancelling():
                    continue  # the caller gave up on this command; serve the next one
                raise
            if not item.future.done():
                item.future.set_result(result)

    async def send(self, frame: bytes, timeout: float) -> bytes:
        item = Item(frame)
        self._queue.put_nowait(item)
        return await asyncio.wait_for(item.future, timeout=timeout)

    async def stop(self) -> None:
        self._worker.cancel()
        try:
            await self._worker
        except asyncio.CancelledError:
            pass
