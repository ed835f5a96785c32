"""Input for tests/test_cannot_lie.py: a project's own loop class on top of the loop asyncio gives it.

looptime and fast-forwarding test loops take the loop they are given and swap its class for a
subclass that tells its own time() or runs its own _run_once() (looptime.patch_event_loop assigns
loop.__class__). Under affidavit the loop given is affidavit's; the subclass's clock and iteration
must be honoured, so the loop is named and the test not explored, never run on another clock:
wherever asyncio's iteration calls self.time() or its selector's select(), the project's are called,
and the run's real clocks stay real (no controlled loop began). Each test passes under plain pytest.
"""

import asyncio
import threading
import time
from typing import Any

import pytest


def patched(loop: asyncio.AbstractEventLoop, name: str, **methods: Any) -> asyncio.AbstractEventLoop:
    """The loop, its class swapped for a subclass with these methods, as looptime patches a loop."""
    loop.__class__ = type(name, (type(loop),), dict(methods))
    return loop


def test_a_loop_class_with_its_own_clock() -> None:
    loop = asyncio.new_event_loop()
    base = type(loop)

    def time(self: asyncio.AbstractEventLoop) -> float:
        return base.time(self) + 1000.0  # type: ignore[attr-defined]

    patched(loop, "OffsetClockLoop", time=time)
    try:
        started = loop.time()
        assert loop.run_until_complete(asyncio.sleep(0.02, result="woke")) == "woke"
        assert 0.02 <= loop.time() - started < 5
    finally:
        loop.close()


def test_a_loop_class_with_its_own_iteration() -> None:
    loop = asyncio.new_event_loop()
    base = type(loop)
    turns = []

    def _run_once(self: asyncio.AbstractEventLoop) -> None:
        turns.append(1)
        base._run_once(self)  # type: ignore[attr-defined]

    patched(loop, "CountingLoop", _run_once=_run_once)
    try:
        assert loop.run_until_complete(asyncio.sleep(0.01, result="woke")) == "woke"
        assert turns, "the loop's own _run_once never ran"
    finally:
        loop.close()


class EndOfTime(Exception):
    """What a fast-forwarding loop raises when nothing is left to wait for."""


def fast_forward(loop: asyncio.AbstractEventLoop, name: str) -> asyncio.AbstractEventLoop:
    """looptime's shape: a class with a fake clock, and the selector's select replaced on the
    instance to move that clock by the timeout instead of waiting (and to end an endless wait)."""
    clock = [0.0]
    selector = loop._selector  # type: ignore[attr-defined]
    real_select = selector.select

    def select(timeout: Any = None) -> Any:
        ready = real_select(0)
        if ready:
            return ready
        if timeout is None:
            raise EndOfTime()
        clock[0] += timeout
        return []

    selector.select = select
    return patched(loop, name, time=lambda self: clock[0])


def test_a_fast_forward_clock_is_the_loops_clock() -> None:
    loop = fast_forward(asyncio.new_event_loop(), "FastForwardLoop")
    spare = asyncio.new_event_loop()  # made, never run (as a plugin's spare loop): nothing to explore
    try:
        started = time.perf_counter()
        loop.run_until_complete(asyncio.sleep(3))
        assert loop.time() >= 3
        assert time.perf_counter() - started < 1.5, "3 s of the loop's own clock took real seconds"
    finally:
        spare.close()
        loop.close()


def test_a_fast_forward_loop_ends_an_endless_wait_its_own_way() -> None:
    loop = fast_forward(asyncio.new_event_loop(), "EndOfTimeLoop")
    try:
        with pytest.raises(EndOfTime):
            loop.run_until_complete(loop.create_future())
    finally:
        loop.close()


def test_a_loop_of_its_own_leaves_the_real_clocks_real() -> None:
    # The thread's 50 ms pass in real time; the test measures them with the real clock, which must
    # not read a virtual clock that nothing moves while this loop runs as asyncio's does.
    loop = asyncio.new_event_loop()
    base = type(loop)
    patched(loop, "RealClocksLoop", time=lambda self: base.time(self) + 1000.0)
    spare = asyncio.new_event_loop()
    done = loop.create_future()
    worker = threading.Thread(target=lambda: (time.sleep(0.05), loop.call_soon_threadsafe(done.set_result, 1)))
    try:
        started = time.perf_counter()
        worker.start()
        assert loop.run_until_complete(done) == 1
        assert time.perf_counter() - started >= 0.05
    finally:
        worker.join()
        spare.close()
        loop.close()
