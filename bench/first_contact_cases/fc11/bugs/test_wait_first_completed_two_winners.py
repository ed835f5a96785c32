"""Model of https://github.com/python/cpython/issues/83852 (bpo-39671):
``asyncio.wait(..., return_when=FIRST_COMPLETED)`` does not promise that only one
future is done when it returns. Code that races connection attempts and takes
``done.pop()`` as "the" winner leaks every other attempt that finished in the
same loop iteration, because it only closes what is left in ``pending``.

Model (stock asyncio): a dual-stack dialer races an IPv6 attempt (ready after
0.1 s) against an IPv4 attempt (ready after 0.6 s) and cancels the loser. Under
natural timing the IPv6 attempt wins alone and the IPv4 attempt is cancelled
before it opens anything. If one loop step takes long enough that both dial
timers are processed in the same iteration, both attempts finish, ``done`` holds
two tasks, and the connection that was not popped is never closed.
"""
import asyncio

import pytest


class Connection:
    open_connections = []

    def __init__(self, family):
        self.family = family
        self.closed = False
        Connection.open_connections.append(self)

    def close(self):
        self.closed = True


async def dial(family, delay):
    await asyncio.sleep(delay)  # SYN / SYN-ACK round trip
    return Connection(family)


async def connect_happy_eyeballs():
    attempts = [
        asyncio.create_task(dial("ipv6", 0.1)),
        asyncio.create_task(dial("ipv4", 0.6)),
    ]
    done, pending = await asyncio.wait(attempts, return_when=asyncio.FIRST_COMPLETED)
    for t in pending:
        t.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    return done.pop().result()  # assumes exactly one attempt finished


@pytest.mark.asyncio
async def test_losing_attempts_are_closed():
    Connection.open_connections.clear()
    conn = await asyncio.wait_for(connect_happy_eyeballs(), 10)
    leaked = [c.family for c in Connection.open_connections if c is not conn and not c.closed]
    conn.close()
    assert leaked == [], f"connection leaked by the dialer: {leaked}"
