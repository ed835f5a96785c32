"""Classes for `affidavit check` (tests/test_check.py): no tests here, only targets."""

import asyncio
import random


class LockedServer:
    """The seed's handler with its state transition under one lock: correct."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.sessions: dict = {}
        self.counters: dict = {}

    async def handle_request(self, client_id: str) -> None:
        async with self.lock:
            curr_sess = self.sessions.get(client_id, 0)
            curr_count = self.counters.get(client_id, 0)
            await asyncio.sleep(0.0001)
            self.sessions[client_id] = curr_sess + 1
            self.counters[client_id] = curr_count + 10


class Journal:
    """Serializable but not commutative: each entry goes in whole, under the lock, after a
    random delay, so the final order differs from run to run and from the call order."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.entries: list = []
        self.last = None

    async def record(self, item: int) -> None:
        await asyncio.sleep(random.random() / 1000)
        async with self.lock:
            await asyncio.sleep(0)
            self.entries.append(item)
            self.last = item


class Account:
    """Check-then-act across an await: two withdrawals both pass the check."""

    def __init__(self, balance: int = 100) -> None:
        self.balance = balance

    async def withdraw(self, amount: int) -> None:
        if self.balance >= amount:
            await asyncio.sleep(0)
            self.balance -= amount


class Stamped:
    """Racy on `hits`, exact on `calls`: --state can look at one of them."""

    def __init__(self) -> None:
        self.calls = 0
        self.hits = 0

    async def hit(self) -> None:
        self.calls += 1
        seen = self.hits
        await asyncio.sleep(0)
        self.hits = seen + 1


class Broken:
    def __init__(self) -> None:
        raise ValueError("no database configured")

    async def go(self) -> None:
        pass


class Plain:
    def total(self) -> int:
        return 0


class StampedCounter:
    """A lost update that fails every time, in a method whose path also depends on the wall
    clock: on an odd microsecond it takes one more step. The failure replays; the trace does not."""

    def __init__(self) -> None:
        self.count = 0

    async def bump(self) -> None:
        seen = self.count
        await asyncio.sleep(0)
        self.count = seen + 1
        import time  # here, not at the top: the line numbers above are part of test_check's messages

        if int(time.monotonic() * 1e6) % 2:
            await asyncio.sleep(0)


class CounterBase:
    """A base whose coroutine method subclasses inherit (check must find it through the bases)."""

    def __init__(self) -> None:
        self.hits = 0

    async def increment(self) -> None:
        seen = self.hits
        await asyncio.sleep(0)
        self.hits = seen + 1


class MemoryCounter(CounterBase):
    pass
