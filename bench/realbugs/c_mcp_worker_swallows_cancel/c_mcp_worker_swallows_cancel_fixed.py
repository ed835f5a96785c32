"""The same worker after the fix: a cancellation of the worker task itself is re-raised (3.11+)."""

import asyncio
import random


class Command:
    def __init__(self, name: str) -> None:
        self.name = name
        self.future: asyncio.Future = asyncio.get_running_loop().create_future()


class ServerWorker:
    def __init__(self) -> None:
        self._queue: asyncio.Queue = asyncio.Queue()
        self.task: asyncio.Task = asyncio.create_task(self._run())

    async def _execute(self, command: Command) -> str:
        await asyncio.sleep(random.uniform(0, 0.001))  # a round trip to the tool server
        return f"{command.name}: ok"

    async def _run(self) -> None:
        while True:
            command = await self._queue.get()
            me = asyncio.current_task()
            requests_before = me.cancelling()
            try:
                result = await self._execute(command)
            except BaseException as exc:
                if not command.future.done():
                    command.future.set_exception(exc)
                if me.cancelling() > requests_before:
                    raise  # the worker itself was asked to stop
                continue
            if not command.future.done():
                command.future.set_result(result)

    async def call(self, name: str) -> str:
        command = Command(name)
        self._queue.put_nowait(command)
        return await command.future
