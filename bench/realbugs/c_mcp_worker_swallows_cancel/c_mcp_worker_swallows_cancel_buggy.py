"""A command worker shaped like the MCP server worker in openai/openai-agents-python#5054.

The worker runs each queued command and records whatever it raised on the command's future, using
`except BaseException`. A cancellation of the worker task that lands while a command runs is recorded
as that command's failure, and the worker goes back to waiting for the next command: the task that
was asked to stop keeps running, and whoever awaits it waits forever.
"""

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
            try:
                result = await self._execute(command)
            except BaseException as exc:
                if not command.future.done():
                    command.future.set_exception(exc)
                continue
            if not command.future.done():
                command.future.set_result(result)

    async def call(self, name: str) -> str:
        command = Command(name)
        self._queue.put_nowait(command)
        return await command.future
