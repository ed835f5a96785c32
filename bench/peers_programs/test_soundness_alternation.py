"""Soundness control: two tasks looping on sleep(0) strictly alternate.

Each `await asyncio.sleep(0)` puts the task's next step at the back of asyncio's FIFO ready queue,
behind the other task's, so the two tasks take turns: a, b, a, b, ... under stock asyncio, always.
A scheduler that picks any ready handle can run one task twice in a row; a failure it reports here
is a false alarm.

Run as a pytest test (by affidavit) and, by bench/peers.py, as the bare coroutine
`test_sleep0_alternates()` under simloop's and simloom's loops.
"""

import asyncio

import pytest

ROUNDS = 5


@pytest.mark.asyncio
async def test_sleep0_alternates() -> None:
    log: list = []

    async def worker(name: str) -> None:
        for _ in range(ROUNDS):
            log.append(name)
            await asyncio.sleep(0)

    await asyncio.gather(worker("a"), worker("b"))
    assert log == ["a", "b"] * ROUNDS
