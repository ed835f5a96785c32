"""Model of the MCP Python SDK's in-memory task store losing an update
notification that arrives before the waiter has registered.

Report: https://github.com/modelcontextprotocol/python-sdk/issues/2535
("InMemoryTaskStore.wait_for_update has lost-wakeup races (concurrent waiters,
notify-before-wait)").

Paraphrase of the report: ``wait_for_update`` creates a fresh event for the
task each time it is called and waits on it, and ``notify_update`` only sets
the event that exists at that moment.  If the task is updated (for example to
its terminal state) after the result handler has read the task's status but
before it calls ``wait_for_update``, the notification finds no event and is
dropped; the handler then waits for an update that never comes.  (The report
also describes concurrent waiters overwriting each other's event.)

The test runs a result handler that polls the task (read status, report it to
the client, then wait for an update) and a worker that completes the task after
50 ms.  Reading the task and reporting it take ~1 ms, so normally the handler is
already waiting when the worker notifies.  If the read or the status report
takes longer than that, the completion lands between the read and the
subscription, the wake-up is lost, and the handler hangs until the test's 2 s
timeout.
"""

import asyncio
import dataclasses

import pytest

EXPECTED = {"cause": "order_violation", "resource": "InMemoryTaskStore._update_events"}

STORE_READ_LATENCY = 0.001
WORK_DURATION = 0.05
TERMINAL = {"completed", "failed", "cancelled"}


@dataclasses.dataclass
class Task:
    task_id: str
    status: str = "working"
    result: str | None = None


class InMemoryTaskStore:
    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}
        self._update_events: dict[str, asyncio.Event] = {}
        self._counter = 0

    async def create_task(self) -> Task:
        self._counter += 1
        task = Task(task_id=f"task-{self._counter}")
        self._tasks[task.task_id] = task
        return dataclasses.replace(task)

    async def get_task(self, task_id: str) -> Task:
        snapshot = dataclasses.replace(self._tasks[task_id])
        await asyncio.sleep(STORE_READ_LATENCY)  # serialisation / storage hop
        return snapshot

    async def update_task(self, task_id: str, status: str, result: str | None = None) -> None:
        task = self._tasks[task_id]
        task.status = status
        task.result = result
        self.notify_update(task_id)

    def notify_update(self, task_id: str) -> None:
        event = self._update_events.get(task_id)
        if event is not None:
            event.set()

    async def wait_for_update(self, task_id: str) -> None:
        # BUG (as reported): a fresh event per call; earlier notifications are lost.
        event = asyncio.Event()
        self._update_events[task_id] = event
        await event.wait()


class ClientSession:
    def __init__(self) -> None:
        self.notifications: list[tuple[str, str]] = []

    async def send_task_status(self, task: Task) -> None:
        self.notifications.append((task.task_id, task.status))
        await asyncio.sleep(0)  # write to the client stream (an anyio checkpoint)


async def wait_for_result(store: InMemoryTaskStore, session: ClientSession, task_id: str) -> Task:
    while True:
        task = await store.get_task(task_id)
        if task.status in TERMINAL:
            return task
        await session.send_task_status(task)
        await store.wait_for_update(task_id)


@pytest.mark.asyncio
async def test_result_handler_sees_completion():
    store = InMemoryTaskStore()
    session = ClientSession()
    task = await store.create_task()

    async def worker():
        await asyncio.sleep(WORK_DURATION)
        await store.update_task(task.task_id, "completed", result="42")

    async def handler():
        return await asyncio.wait_for(wait_for_result(store, session, task.task_id), timeout=2)

    _, final = await asyncio.gather(worker(), handler())
    assert final.status == "completed"
    assert final.result == "42"
