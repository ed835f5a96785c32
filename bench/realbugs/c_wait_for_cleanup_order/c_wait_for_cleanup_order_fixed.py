"""The same helper after bpo-32751: on timeout it waits for the cancelled operation to finish."""

import asyncio
import random


async def wait_for(aw, timeout: float):
    loop = asyncio.get_running_loop()
    inner = asyncio.ensure_future(aw)
    gate = loop.create_future()

    def open_gate(_=None) -> None:
        if not gate.done():
            gate.set_result(None)

    timer = loop.call_later(timeout, open_gate)
    inner.add_done_callback(open_gate)
    try:
        await gate
        if inner.done():
            return inner.result()
        inner.remove_done_callback(open_gate)
        inner.cancel()
        # Wait until the cancelled operation has unwound, so its cleanup runs before we resume.
        await asyncio.wait([inner])
        raise asyncio.TimeoutError()
    finally:
        timer.cancel()


class Connection:
    def __init__(self, number: int) -> None:
        self.number = number

    async def execute(self, sql: str) -> str:
        await asyncio.sleep(random.uniform(0, 0.004))  # the server's reply time
        return f"{sql} on #{self.number}"


class Pool:
    def __init__(self, size: int) -> None:
        self.idle = [Connection(n) for n in range(size)]

    async def query(self, sql: str) -> str:
        conn = self.idle.pop()
        try:
            return await conn.execute(sql)
        finally:
            self.idle.append(conn)


async def handle(pool: Pool, sql: str):
    """One web request: a query with a deadline; on timeout the request answers 504."""
    try:
        return await wait_for(pool.query(sql), timeout=0.0035)
    except asyncio.TimeoutError:
        return None
