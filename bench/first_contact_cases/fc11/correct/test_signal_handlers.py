"""Signal-driven service control, as daemons do it (gunicorn/uvicorn workers,
Celery, a config reloader on SIGUSR1/SIGHUP): ``loop.add_signal_handler`` and
``remove_signal_handler``, with the signal sent to this very process.

Each test waits until its signal was handled before it removes the handler, so no
signal ever arrives without one.
"""
import asyncio
import os
import signal
import threading

import pytest

pytestmark = pytest.mark.asyncio


class ConfigService:
    def __init__(self):
        self.version = 0
        self.reload_requested = asyncio.Event()
        self.reloaded = asyncio.Condition()

    def on_sigusr1(self):
        self.reload_requested.set()

    async def run(self):
        while True:
            await self.reload_requested.wait()
            self.reload_requested.clear()
            await asyncio.sleep(0)  # re-read files
            async with self.reloaded:
                self.version += 1
                self.reloaded.notify_all()

    async def wait_version(self, v):
        async with self.reloaded:
            await self.reloaded.wait_for(lambda: self.version >= v)


async def test_handler_runs_on_loop_thread_with_args():
    loop = asyncio.get_running_loop()
    got = loop.create_future()

    def handler(tag):
        got.set_result((tag, threading.get_ident(), asyncio.get_running_loop()))

    loop.add_signal_handler(signal.SIGUSR1, handler, "usr1")
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        tag, ident, running = await asyncio.wait_for(got, 20)
    finally:
        assert loop.remove_signal_handler(signal.SIGUSR1) is True
    assert tag == "usr1"
    assert ident == threading.get_ident()
    assert running is loop


async def test_reload_service_twice():
    loop = asyncio.get_running_loop()
    svc = ConfigService()
    runner = asyncio.create_task(svc.run())
    loop.add_signal_handler(signal.SIGUSR1, svc.on_sigusr1)
    try:
        for v in (1, 2):
            os.kill(os.getpid(), signal.SIGUSR1)
            await asyncio.wait_for(svc.wait_version(v), 20)
        assert svc.version == 2
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


async def test_second_handler_replaces_first():
    loop = asyncio.get_running_loop()
    calls = []
    done = asyncio.Event()
    loop.add_signal_handler(signal.SIGUSR2, calls.append, "first")
    loop.add_signal_handler(signal.SIGUSR2, lambda: (calls.append("second"), done.set()))
    try:
        os.kill(os.getpid(), signal.SIGUSR2)
        await asyncio.wait_for(done.wait(), 20)
    finally:
        loop.remove_signal_handler(signal.SIGUSR2)
    assert calls == ["second"]


async def test_invalid_registrations():
    loop = asyncio.get_running_loop()
    assert loop.remove_signal_handler(signal.SIGUSR2) is False
    with pytest.raises(RuntimeError):
        loop.add_signal_handler(signal.SIGKILL, print)
    with pytest.raises(ValueError):
        loop.add_signal_handler(signal.NSIG + 1, print)
    with pytest.raises(TypeError):
        loop.add_signal_handler(signal.SIGUSR1, asyncio.sleep)  # a coroutine function
