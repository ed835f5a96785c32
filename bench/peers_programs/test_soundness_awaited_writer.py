"""Soundness control: the reader awaits the writer task before it reads.

The write happens-before the read under every schedule (the reader cannot resume before the writer
task is done), so this is correct whatever order the ready queue is served in: no tool may report it.
It checks that the random schedulers respect causality, and separates their false alarms on the
FIFO controls from plain unsoundness.

Run as a pytest test (by affidavit) and, by bench/peers.py, as the bare coroutine
`test_reader_awaits_writer()` under simloop's and simloom's loops.
"""

import asyncio

import pytest


@pytest.mark.asyncio
async def test_reader_awaits_writer() -> None:
    store: dict = {}

    async def writer() -> None:
        await asyncio.sleep(0)
        store["key"] = "value"

    async def reader(task: "asyncio.Task[None]") -> str:
        await task
        return store["key"]

    w = asyncio.create_task(writer())
    r = asyncio.create_task(reader(w))
    assert await r == "value"
