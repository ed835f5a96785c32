"""A connection pool that limits open connections but does not count the ones being established.

Paraphrased from dask/distributed (see README.md): the capacity check counts only connections that
are already open, so callers arriving while others are still connecting all pass it.
"""

import asyncio
import random
from collections import defaultdict


class FakeConnector:
    """The network: opens comms to an address and remembers how many were alive at once."""

    def __init__(self) -> None:
        self.live = 0
        self.max_live = 0

    async def connect(self, addr: str) -> "Comm":
        await asyncio.sleep(random.uniform(0.0005, 0.0015))  # the TCP and handshake round trips
        self.live += 1
        self.max_live = max(self.max_live, self.live)
        return Comm(self, addr)


class Comm:
    def __init__(self, connector: FakeConnector, addr: str) -> None:
        self._connector = connector
        self.addr = addr
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._connector.live -= 1


class ConnectionPool:
    def __init__(self, connector: FakeConnector, limit: int) -> None:
        self.limit = limit
        self._connector = connector
        self.available: dict = defaultdict(set)
        self.occupied: dict = defaultdict(set)
        self.event = asyncio.Event()

    @property
    def open(self) -> int:
        return sum(len(s) for s in self.available.values()) + sum(len(s) for s in self.occupied.values())

    def _has_capacity(self) -> bool:
        return self.open < self.limit

    async def connect(self, addr: str) -> Comm:
        while True:
            if self.available[addr]:
                comm = self.available[addr].pop()
                self.occupied[addr].add(comm)
                return comm
            if self._has_capacity():
                break
            self.event.clear()
            await self.event.wait()
        comm = await self._connector.connect(addr)
        self.occupied[addr].add(comm)
        return comm

    def reuse(self, addr: str, comm: Comm) -> None:
        self.occupied[addr].discard(comm)
        self.available[addr].add(comm)
        self.event.set()

    def close(self) -> None:
        for comms in (*self.available.values(), *self.occupied.values()):
            for comm in comms:
                comm.close()
