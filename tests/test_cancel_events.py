"""Cancellation and hand-offs as the runtime records them (trace.h, kinds CANCEL to RESUME), read
back through the engine: `affidavit replay ZERO_TOKEN NODEID --events` runs one program of
tests/cases/case_cancel_events.py in a forked worker and prints its trace's events, one line each.

Each test asserts that every event it expects appears exactly once, naming the right tasks and
the line of the await, and that the events that must not happen do not. They run under every
Python from 3.10 to 3.13 this machine has (the engine built for each, as test_versions.py does);
what a Python lacks (uncancel(), asyncio.timeout before 3.11) is asserted absent, and wait_for's
two implementations (a waiter released by a timer up to 3.11, asyncio.timeout from 3.12) each get
their own expectations."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import AFFIDAVIT, CASES, REPO, describe, engine_env  # noqa: E402
from test_cli import ZERO_TOKEN  # noqa: E402
from test_versions import INTERPRETERS, env_for  # noqa: E402

CASE = f"{CASES}/case_cancel_events.py"
CASE_FILE = REPO / CASE
HERE = sys.version_info[:2]
# Another Python's minor runs that Python's plain build (test_versions.env_for): marked plain_build.
MINORS = [m if m == f"{HERE[0]}.{HERE[1]}" else pytest.param(m, marks=pytest.mark.plain_build)
          for m in sorted(INTERPRETERS) or [f"{HERE[0]}.{HERE[1]}"]]


def mark(text: str) -> str:
    """"tests/cases/case_cancel_events.py:LINE" (as traces name places) of the line carrying the marker."""
    with open(CASE_FILE) as f:
        line = next(i for i, src in enumerate(f, 1) if f"# mark: {text}" in src)
    return f"{CASE}:{line}"


_engines: Dict[str, Tuple[str, Dict[str, str]]] = {}


def engine_for(minor: str) -> Tuple[str, Dict[str, str]]:
    """The affidavit engine built for this Python and the environment to run it in."""
    if minor not in _engines:
        if minor == f"{HERE[0]}.{HERE[1]}":
            _engines[minor] = (str(AFFIDAVIT), engine_env())
        else:
            env = env_for(minor)
            _engines[minor] = (str(REPO / "build" / f"py{minor}-venv" / "bin" / "affidavit"), engine_env(env))
    return _engines[minor]


def events(minor: str, test: str) -> List[str]:
    """The event lines of one zero-schedule run of the case's test under Python `minor`."""
    exe, env = engine_for(minor)
    proc = subprocess.run([exe, "replay", ZERO_TOKEN, f"{CASE}::{test}", "-n", "1", "--events", "--workers", "1"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert "events of run 1 (pass)" in proc.stderr, describe(proc)
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.startswith("  ")]
    assert lines, describe(proc)
    return lines


def version(minor: str) -> Tuple[int, int]:
    major, low = minor.split(".")
    return int(major), int(low)


def only(lines: List[str], pattern: str) -> str:
    """The one line matching pattern (a regex searched in each line); fails unless exactly one."""
    found = [ln for ln in lines if re.search(pattern, ln)]
    assert len(found) == 1, f"{len(found)} lines match {pattern!r}:\n" + "\n".join(lines)
    return found[0]


def none(lines: List[str], pattern: str) -> None:
    found = [ln for ln in lines if re.search(pattern, ln)]
    assert not found, f"unexpected lines matching {pattern!r}:\n" + "\n".join(lines)


@pytest.mark.parametrize("minor", MINORS)
def test_cancel_of_a_sleeping_task(minor: str) -> None:
    ev = events(minor, "test_cancel_sleeping")
    only(ev, r'^cancel of task sleeper#0 by test_cancel_sleeping#0 at t=[0-9.]+ms, message "stop"$')
    only(ev, rf"^CancelledError thrown into task sleeper#0 at {mark('sleeper awaits')} \(cancelled in step \d+\)$")
    none(ev, r"caught CancelledError")
    # the sleep's future, cancelled by Task.cancel on the way, is the cancellation, not a hand-off
    none(ev, r"hand-off .* to task sleeper#0")


@pytest.mark.parametrize("minor", MINORS)
def test_a_swallowed_cancel_is_caught(minor: str) -> None:
    ev = events(minor, "test_cancel_swallowed")
    only(ev, r"^cancel of task swallower#0 by test_cancel_swallowed#0 at t=[0-9.]+ms$")
    only(ev, rf"^CancelledError thrown into task swallower#0 at {mark('swallower awaits')} ")
    only(ev, r"^task swallower#0 caught CancelledError \(cancelled in step \d+\) and returned$")


@pytest.mark.parametrize("minor", MINORS)
def test_uncancel_is_recorded_where_there_is_one(minor: str) -> None:
    ev = events(minor, "test_uncancel")
    only(ev, rf"^CancelledError thrown into task uncanceller#0 at {mark('uncanceller awaits')} ")
    caught = only(ev, rf"^task uncanceller#0 caught CancelledError \(cancelled in step \d+\) and suspended at "
                      rf"{mark('uncanceller suspends again')}")
    if version(minor) >= (3, 11):
        only(ev, rf"^uncancel of task uncanceller#0 by uncanceller#0 at {mark('uncancel call')} "
                 r"\(0 cancel requests left\)$")
        assert caught.endswith(", calling uncancel()"), caught
    else:
        none(ev, r"^uncancel ")
        assert "calling uncancel()" not in caught, caught


@pytest.mark.parametrize("minor", MINORS)
def test_wait_for_timing_out(minor: str) -> None:
    ev = events(minor, "test_wait_for_times_out")
    armed = mark("wait_for armed")
    if version(minor) >= (3, 12):
        # wait_for is asyncio.timeout around the await: the caller itself is cancelled, then uncancelled
        only(ev, rf"^wait_for timeout expired at t=[0-9.]+ms \(deadline #\d+\) armed at {armed}: "
                 r"cancels task test_wait_for_times_out#0$")
        only(ev, r"^cancel of task test_wait_for_times_out#0 by .* \(a timeout expired\)$")
        # thrown at the await the task is suspended at: slow()'s, which wait_for awaits inline (the
        # await chain runs through wait_for's library frame into the user's coroutine)
        only(ev, rf"^CancelledError thrown into task test_wait_for_times_out#0 at {mark('slow')} ")
        only(ev, r"^uncancel of task test_wait_for_times_out#0 by test_wait_for_times_out#0 ")
        only(ev, r"^task test_wait_for_times_out#0 caught CancelledError .*and returned, calling uncancel\(\)$")
    else:
        # the timer releases wait_for's waiter; wait_for then cancels the task it made for slow()
        only(ev, rf"^wait_for timeout expired at t=[0-9.]+ms \(deadline #\d+\) armed at {armed}: "
                 r"cancels task slow#0$")
        only(ev, r"^cancel of task slow#0 by test_wait_for_times_out#0 at t=[0-9.]+ms \(a timeout expired\)$")
        only(ev, rf"^CancelledError thrown into task slow#0 at {mark('slow')} ")
        none(ev, r"caught CancelledError")
        none(ev, r"^uncancel ")
    only(ev, r"\(a timeout expired\)")
    only(ev, r"timeout expired at")


@pytest.mark.parametrize("minor", MINORS)
def test_asyncio_timeout(minor: str) -> None:
    ev = events(minor, "test_timeout_context")
    if version(minor) < (3, 11):
        none(ev, r"timeout expired|^cancel of|CancelledError|^uncancel")
        return
    only(ev, rf"^asyncio.timeout expired at t=[0-9.]+ms \(deadline #\d+\) armed at {mark('timeout armed')}: "
             r"cancels task test_timeout_context#0$")
    only(ev, r"^cancel of task test_timeout_context#0 by .*Timeout._on_timeout.* \(a timeout expired\)$")
    only(ev, r"^CancelledError thrown into task test_timeout_context#0 at ")
    only(ev, r"^uncancel of task test_timeout_context#0 by test_timeout_context#0 ")
    only(ev, r"^task test_timeout_context#0 caught CancelledError .*and returned, calling uncancel\(\)$")


@pytest.mark.parametrize("minor", MINORS)
def test_lock_hand_off_and_resume(minor: str) -> None:
    ev = events(minor, "test_lock_handoff")
    lock = f"Lock@{mark('lock one')}"
    only(ev, rf"^hand-off of {lock} to task waiter#0 by holder#0$")
    only(ev, rf"^task waiter#0 resumed with the hand-off of {lock} \(handed in step \d+\)$")
    none(ev, r"CancelledError|^cancel of")


@pytest.mark.parametrize("minor", MINORS)
def test_waiter_cancelled_after_the_hand_off(minor: str) -> None:
    ev = events(minor, "test_lock_handoff_then_cancel")
    lock = f"Lock@{mark('lock two')}"
    handoff = only(ev, rf"^hand-off of {lock} to task waiter#0 by test_lock_handoff_then_cancel#0$")
    cancel = only(ev, r"^cancel of task waiter#0 by test_lock_handoff_then_cancel#0 at t=[0-9.]+ms "
                      r"\(its wake-up was already scheduled\)$")
    assert ev.index(handoff) < ev.index(cancel), "\n".join(ev)
    only(ev, rf"^task waiter#0 resumed into CancelledError instead of the hand-off of {lock} \(handed in step \d+\)$")
    only(ev, r"^CancelledError thrown into task waiter#0 at ")
    none(ev, r"resumed with the hand-off")


@pytest.mark.parametrize("minor", MINORS)
def test_queue_get_hand_off(minor: str) -> None:
    ev = events(minor, "test_queue_handoff")
    queue = f"Queue@{mark('the queue')}"
    only(ev, rf"^hand-off of {queue} to task consumer#0 by test_queue_handoff#0$")
    only(ev, rf"^task consumer#0 resumed with the hand-off of {queue} ")


@pytest.mark.parametrize("minor", MINORS)
def test_future_set_exception(minor: str) -> None:
    ev = events(minor, "test_future_exception")
    fut = f"Future@{mark('awaiter awaits the future')}"
    only(ev, rf"^hand-off of {fut} to task awaiter#0 by test_future_exception#0 \(an exception\)$")
    only(ev, rf"^task awaiter#0 resumed with the hand-off of {fut} ")
    none(ev, r"CancelledError")


@pytest.mark.one_thread  # an in-process run: under pytest-xdist, in a child with no execnet thread beside it
def test_a_natural_run_records_no_cancellation() -> None:
    """The same cancel and hand-off, in-process: recorded under the controlled loop, not at all in
    a natural run (whose trace only says whether the test failed), and Task.cancel() keeps its
    behaviour (its result, its message) either way."""
    import asyncio

    import affidavit
    from affidavit import _runtime
    from affidavit.loop import ControlledLoop

    async def program() -> bool:
        lock = asyncio.Lock()
        await lock.acquire()

        async def waiter() -> None:
            async with lock:
                pass

        w = asyncio.ensure_future(waiter())
        await asyncio.sleep(0)
        lock.release()
        assert w.cancel("bye") is True
        try:
            await w
        except asyncio.CancelledError:
            pass
        assert w.cancelled() and w.cancel() is False
        return not lock.locked()

    kinds = (_runtime.EV_CANCEL, _runtime.EV_CANCEL_DELIVERED, _runtime.EV_CANCEL_CAUGHT, _runtime.EV_UNCANCEL,
             _runtime.EV_TIMEOUT, _runtime.EV_HANDOFF, _runtime.EV_RESUME)
    affidavit.install()
    seen = {}
    for mode in (_runtime.MODE_CONTROLLED, _runtime.MODE_NATURAL):
        _runtime.configure(mode, "")
        _runtime.recorder_begin(1 << 20)
        loop = ControlledLoop()
        try:
            assert loop.run_until_complete(program()) is True
        finally:
            loop.close()
        seen[mode] = sorted(k for k, *_ in _runtime.events() if k in kinds)
    assert seen[_runtime.MODE_CONTROLLED] == sorted([_runtime.EV_HANDOFF, _runtime.EV_CANCEL, _runtime.EV_CANCEL,
                                                     _runtime.EV_RESUME, _runtime.EV_CANCEL_DELIVERED]), seen
    assert seen[_runtime.MODE_NATURAL] == [], seen
