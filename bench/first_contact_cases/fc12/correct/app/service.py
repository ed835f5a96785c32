"""Wiring: build a whole service from settings, start it, stop it in order."""
import asyncio

from .broker import Broker
from .jobs import JobQueue
from .server import AppServer


class FlakyHandler:
    """Fails the first `failures` attempts of each payload key, then succeeds."""

    def __init__(self):
        self.seen = {}

    async def __call__(self, payload):
        key = payload["key"]
        self.seen[key] = self.seen.get(key, 0) + 1
        if self.seen[key] <= payload.get("failures", 0):
            raise RuntimeError(f"transient failure {self.seen[key]} for {key}")
        return {"key": key, "attempts": self.seen[key]}


async def _echo(payload):
    return payload


async def _sleep(payload):
    await asyncio.sleep(payload.get("s", 0.05))
    return "slept"


async def _fail(payload):
    raise ValueError(payload.get("why", "boom"))


def default_handlers():
    return {"echo": _echo, "sleep": _sleep, "fail": _fail, "flaky": FlakyHandler()}


class Service:
    def __init__(self, settings, store, host="127.0.0.1", port=0):
        self.settings = settings
        self.store = store
        self.broker = Broker()
        self.jobs = JobQueue(default_handlers(), workers=settings.workers, max_retries=settings.max_retries,
                             backoff=settings.retry_backoff, broker=self.broker)
        self.server = AppServer(store, self.broker, self.jobs, host, port, settings.shutdown_grace)

    @property
    def port(self):
        return self.server.port

    async def start(self):
        await self.jobs.start()
        await self.server.start()
        return self

    async def stop(self):
        await self.server.stop()
        await self.jobs.stop(drain=False)
        self.broker.close()
        await self.store.close()
