"""Input for tests/test_cannot_lie.py: a project's own loop class on top of the loop asyncio gives it.

looptime and fast-forwarding test loops subclass the running loop's class and tell their own time()
or run their own _run_once(). Under affidavit that class is built on affidavit's loop; its clock and
iteration must be honoured, so the loop is named and the test not explored, never run on another
clock. Each test passes under plain pytest.
"""

import asyncio


def own_class(base: type, name: str, **methods: object) -> type:
    return type(name, (base,), dict(methods))


def test_a_loop_class_with_its_own_clock() -> None:
    base = type(asyncio.new_event_loop())  # the class the policy gives: affidavit's under affidavit
    offset = 1000.0

    def time(self: asyncio.AbstractEventLoop) -> float:
        return base.time(self) + offset  # type: ignore[attr-defined]

    loop = own_class(base, "OffsetClockLoop", time=time)()
    try:
        started = loop.time()
        assert loop.run_until_complete(asyncio.sleep(0.02, result="woke")) == "woke"
        assert 0.02 <= loop.time() - started < 5
    finally:
        loop.close()


def test_a_loop_class_with_its_own_iteration() -> None:
    base = type(asyncio.new_event_loop())
    turns = []

    def _run_once(self: asyncio.AbstractEventLoop) -> None:
        turns.append(1)
        base._run_once(self)  # type: ignore[attr-defined]

    loop = own_class(base, "CountingLoop", _run_once=_run_once)()
    try:
        assert loop.run_until_complete(asyncio.sleep(0.01, result="woke")) == "woke"
        assert turns, "the loop's own _run_once never ran"
    finally:
        loop.close()


def test_a_loop_whose_class_is_swapped_for_one_with_its_own_clock() -> None:
    loop = asyncio.new_event_loop()
    base = type(loop)

    def time(self: asyncio.AbstractEventLoop) -> float:
        return base.time(self) + 1000.0  # type: ignore[attr-defined]

    loop.__class__ = own_class(base, "SwappedClockLoop", time=time)  # as looptime patches a loop
    try:
        assert loop.run_until_complete(asyncio.sleep(0.01, result="woke")) == "woke"
    finally:
        loop.close()
