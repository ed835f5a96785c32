"""A manager of tool-server connections with both reconnect paths serialised per server.

Paraphrased from NorthlandPositronics/Cogtrix (see README.md): the fix takes a per-server asyncio.Lock
around the whole take-close-connect-store sequence, as the real fix did.
"""

import asyncio
import random


class ConnectionLost(Exception):
    pass


class FakeToolServer:
    """The remote server: the transports (streams and sockets) currently open to it."""

    def __init__(self) -> None:
        self.open_transports: set = set()
        self.opened = 0

    async def open_transport(self) -> "Transport":
        await asyncio.sleep(random.uniform(0.0005, 0.002))  # the socket and the SSE handshake
        self.opened += 1
        transport = Transport(self, self.opened)
        self.open_transports.add(transport)
        return transport


class Transport:
    def __init__(self, server: FakeToolServer, number: int) -> None:
        self._server = server
        self.number = number
        self.alive = True

    def close(self) -> None:
        self.alive = False
        self._server.open_transports.discard(self)


class Connection:
    def __init__(self, server: FakeToolServer) -> None:
        self._server = server
        self.transport = None

    async def connect(self) -> None:
        self.transport = await self._server.open_transport()

    async def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    async def call(self, tool: str) -> str:
        await asyncio.sleep(random.uniform(0, 0.0005))
        if self.transport is None or not self.transport.alive:
            raise ConnectionLost(tool)
        return f"{tool}: ok"


class ToolManager:
    def __init__(self, servers: dict) -> None:
        self._servers = servers
        self._connections: dict = {}
        self._reconnect_locks: dict = {}

    def _take_connection(self, name: str):
        return self._connections.pop(name, None)

    def _reconnect_lock(self, name: str) -> asyncio.Lock:
        # Created lazily, inside the running loop, one per server.
        return self._reconnect_locks.setdefault(name, asyncio.Lock())

    async def _reconnect_server_async(self, name: str) -> None:
        # Both reconnect paths come here; the lock makes take-close-connect-store one step.
        async with self._reconnect_lock(name):
            old = self._take_connection(name)
            if old is not None:
                await old.close()
            conn = Connection(self._servers[name])
            await conn.connect()
            self._connections[name] = conn

    async def start(self, name: str) -> None:
        await self._reconnect_server_async(name)

    async def heartbeat(self, name: str) -> None:
        conn = self._connections.get(name)
        if conn is None or conn.transport is None or not conn.transport.alive:
            await self._reconnect_server_async(name)

    def is_connected(self, name: str) -> bool:
        conn = self._connections.get(name)
        return conn is not None and conn.transport is not None and conn.transport.alive

    async def call_tool(self, name: str, tool: str) -> str:
        conn = self._connections.get(name)
        try:
            if conn is None:
                raise ConnectionLost(tool)
            return await conn.call(tool)
        except ConnectionLost:
            # The failed call is reported to the agent, which retries it; the connection is
            # re-established for that retry.
            await self._reconnect_server_async(name)
            return f"{tool}: connection lost, reconnected"
