"""Capacity limiter over-admits: a non-blocking acquire slips into a token that was just
handed to a woken waiter.

Report: https://github.com/agronholm/anyio/issues/1170 (fixed by
https://github.com/agronholm/anyio/pull/1172). Paraphrase: on the asyncio backend, releasing
a token popped the next waiter and set its event, but the waiter only registered itself as a
borrower when it actually resumed. A nowait acquire that ran in between saw a free token and an
empty wait queue and was admitted, leaving two borrowers on a one-token limiter.

Model: the pre-fix accounting, re-implemented. A job H holds the only token and releases it after
an I/O step (0.1 s); W queued behind it at the start; a poller X tries ``acquire_nowait`` at
0.25 s and otherwise waits its turn. Naturally W has resumed long before X polls.
"""

import asyncio
import collections

import pytest

HOLD_IO = 0.1      # H's work while holding the token
POLL_AT = 0.25     # when X tries a non-blocking acquire
W_WORK = 0.15      # W's work once it has the token


class WouldBlock(Exception):
    pass


class Limiter:
    def __init__(self, total):
        self.total = total
        self.borrowers = set()
        self.waiters = collections.deque()

    def acquire_nowait(self, who):
        if len(self.borrowers) >= self.total or self.waiters:
            raise WouldBlock
        self.borrowers.add(who)

    async def acquire(self, who):
        try:
            self.acquire_nowait(who)
            return
        except WouldBlock:
            pass
        event = asyncio.Event()
        self.waiters.append(event)
        try:
            await event.wait()
        except BaseException:
            if event in self.waiters:
                self.waiters.remove(event)
            raise
        self.borrowers.add(who)  # registered only now, after resuming

    def release(self, who):
        self.borrowers.remove(who)
        if self.waiters:
            self.waiters.popleft().set()


@pytest.mark.asyncio
async def test_limiter_never_has_two_borrowers():
    limiter = Limiter(1)
    active = 0
    peak = 0

    async def use(who, work):
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(work)
        active -= 1
        limiter.release(who)

    async def holder():
        await limiter.acquire("H")
        await use("H", HOLD_IO)

    async def waiter():
        await limiter.acquire("W")
        await use("W", W_WORK)

    async def poller():
        await asyncio.sleep(POLL_AT)
        try:
            limiter.acquire_nowait("X")
        except WouldBlock:
            await limiter.acquire("X")
        await use("X", 0.01)

    h = asyncio.create_task(holder())
    await asyncio.sleep(0)  # H holds the token before W queues
    await asyncio.wait_for(asyncio.gather(h, waiter(), poller()), 5)
    assert peak == 1, f"{peak} tasks held a one-token limiter at once"
