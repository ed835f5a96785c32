"""Owning an event loop by hand, as CLIs, GUI integrations and embedded
interpreters do (``new_event_loop`` + ``set_event_loop`` + ``run_until_complete``,
``run_forever``/``stop``, ``asyncio.Runner`` with a ``loop_factory``). These are
plain synchronous tests: each one creates, runs and closes its own loop.
"""
import asyncio

import pytest


class CountingLoop(asyncio.SelectorEventLoop):
    """A loop subclass that counts scheduled callbacks (like a profiling loop)."""

    def __init__(self):
        super().__init__()
        self.scheduled = 0

    def call_soon(self, callback, *args, context=None):
        self.scheduled += 1
        return super().call_soon(callback, *args, context=context)


def test_run_until_complete_and_state_flags():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        assert not loop.is_running()

        async def probe():
            assert asyncio.get_running_loop() is loop
            return loop.is_running()

        assert loop.run_until_complete(probe()) is True
        assert not loop.is_running()
        with pytest.raises(ZeroDivisionError):
            loop.run_until_complete(_boom())
    finally:
        asyncio.set_event_loop(None)
        loop.close()
    assert loop.is_closed()
    coro = asyncio.sleep(0)
    with pytest.raises(RuntimeError):
        loop.run_until_complete(coro)
    coro.close()


async def _boom():
    await asyncio.sleep(0)
    return 1 / 0


def test_run_forever_stopped_by_call_later():
    loop = asyncio.new_event_loop()
    try:
        ticks = []

        async def ticker():
            while True:
                ticks.append(loop.time())
                await asyncio.sleep(0.01)

        t = loop.create_task(ticker())
        start = loop.time()
        loop.call_later(0.2, loop.stop)
        loop.run_forever()
        assert loop.time() - start >= 0.19
        assert not loop.is_running()
        assert ticks and not t.done()
        # The paused task resumes on the next run.
        n = len(ticks)

        async def until_more_ticks():
            async with asyncio.timeout(20):
                while len(ticks) <= n:
                    await asyncio.sleep(0.005)

        loop.run_until_complete(until_more_ticks())
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            loop.run_until_complete(t)
    finally:
        loop.close()


def test_stop_before_run_forever_runs_one_round():
    loop = asyncio.new_event_loop()
    try:
        log = []

        def first():
            log.append("first")
            loop.call_soon(log.append, "scheduled by first")

        loop.call_soon(first)
        loop.stop()
        loop.run_forever()
        assert log == ["first"]
        loop.stop()
        loop.run_forever()
        assert log == ["first", "scheduled by first"]
    finally:
        loop.close()


def test_stop_from_inside_a_task():
    loop = asyncio.new_event_loop()
    try:
        async def shutdown_after(n):
            for _ in range(n):
                await asyncio.sleep(0)
            loop.stop()
            return "stopped"

        t = loop.create_task(shutdown_after(3))
        loop.run_forever()
        # stop() only ends the loop after the current iteration; the task had
        # already finished its last step.
        assert t.done() and t.result() == "stopped"
    finally:
        loop.close()


def test_runner_with_loop_factory():
    made = []

    def factory():
        loop = CountingLoop()
        made.append(loop)
        return loop

    async def step(x):
        await asyncio.sleep(0)
        return x * 2

    with asyncio.Runner(loop_factory=factory) as runner:
        loop = runner.get_loop()
        assert made == [loop]
        assert isinstance(loop, CountingLoop)
        assert runner.run(step(2)) == 4
        assert runner.run(step(5)) == 10
        assert loop.scheduled > 0
        assert not loop.is_closed()
    assert loop.is_closed()
    assert len(made) == 1


def test_future_resolved_by_timer_and_monotonic_time():
    loop = asyncio.new_event_loop()
    try:
        fut = loop.create_future()
        start = loop.time()
        loop.call_later(0.1, fut.set_result, "timer fired")
        assert loop.run_until_complete(fut) == "timer fired"
        end = loop.time()
        assert end - start >= 0.09
        assert end - start < 10
    finally:
        loop.close()
