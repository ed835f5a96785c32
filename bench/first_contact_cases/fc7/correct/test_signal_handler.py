"""Real POSIX signals delivered to the process and handled by the event loop."""
import asyncio
import os
import signal
import sys
import threading

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.mark.asyncio
async def test_add_signal_handler_receives_sigusr1():
    loop = asyncio.get_running_loop()
    got = loop.create_future()
    loop.add_signal_handler(signal.SIGUSR1, lambda: got.done() or got.set_result("usr1"))
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        assert await asyncio.wait_for(got, 5) == "usr1"
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)


@pytest.mark.asyncio
async def test_signal_sent_from_another_thread_wakes_loop():
    loop = asyncio.get_running_loop()
    count = 0
    done = asyncio.Event()

    def on_sig():
        nonlocal count
        count += 1
        if count == 3:
            done.set()

    loop.add_signal_handler(signal.SIGUSR2, on_sig)
    try:
        def sender():
            for _ in range(3):
                os.kill(os.getpid(), signal.SIGUSR2)
                threading.Event().wait(0.03)

        th = threading.Thread(target=sender)
        th.start()
        await asyncio.wait_for(done.wait(), 5)
        th.join()
        assert count == 3
    finally:
        loop.remove_signal_handler(signal.SIGUSR2)
