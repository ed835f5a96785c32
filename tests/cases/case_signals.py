"""Input for tests/test_cannot_lie.py: a signal the test sends itself, handled by the loop.

os.kill to the test's own process delivers the signal at once: its byte is in the loop's self-pipe
before the test awaits, and the stock loop's next select sees it. Plain pytest passes both.
"""

import asyncio
import os
import signal

import pytest


@pytest.mark.asyncio
async def test_a_signal_under_a_timeout() -> None:
    loop = asyncio.get_running_loop()
    got = loop.create_future()
    loop.add_signal_handler(signal.SIGUSR1, lambda: got.done() or got.set_result("usr1"))
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        assert await asyncio.wait_for(got, 5) == "usr1"
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)


@pytest.mark.asyncio
async def test_a_signal_with_nothing_else_pending() -> None:
    loop = asyncio.get_running_loop()
    got = loop.create_future()
    loop.add_signal_handler(signal.SIGUSR2, lambda: got.done() or got.set_result("usr2"))
    try:
        os.kill(os.getpid(), signal.SIGUSR2)
        assert await got == "usr2"
    finally:
        loop.remove_signal_handler(signal.SIGUSR2)
