"""Input for tests/test_cannot_lie.py: a project's own loop class on top of the loop asyncio gives it.

looptime and fast-forwarding test loops take the loop they are given and swap its class for a
subclass that tells its own time() or runs its own _run_once() (looptime.patch_event_loop assigns
loop.__class__). Under affidavit the loop given is affidavit's; the subclass's clock and iteration
must be honoured, so the loop is named and the test not explored, never run on another clock. Each
test passes under plain pytest.
"""

import asyncio
from typing import Any


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
