"""Race-free control: correct only because asyncio runs ready callbacks in FIFO order, which every
real loop guarantees. Tools that shuffle the ready queue report a failure here; affidavit must not."""

import asyncio

import pytest


async def append(log: list, value: int) -> None:
    log.append(value)


@pytest.mark.asyncio
async def test_fifo_order() -> None:
    log: list = []
    first = asyncio.ensure_future(append(log, 1))
    second = asyncio.ensure_future(append(log, 2))
    await asyncio.gather(first, second)
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.call_soon(log.append, 3)
    loop.call_soon(done.set_result, None)
    await done
    assert log == [1, 2, 3]
