"""A loop asyncio code cannot tell apart from stock (issue 18, items 6 and 7).

Handles: what call_soon/call_soon_threadsafe/call_later/call_at return are instances of asyncio's
Handle and TimerHandle, with asyncio's own methods, slots, ordering and repr; the loop and the
policy are the asyncio types stock gives. Time: every controlled step costs at least
_runtime.STEP_FLOOR_NS, so loop.time() advances between two steps and a rate limiter that
re-arms its timer from the elapsed loop time makes progress under the zero schedule (it stood
still forever before). The programs are tests/cases/case_loop_fidelity.py; each is run under plain
pytest (the reference), under `affidavit explore` with the zero schedule and the portfolio, and
under `affidavit sample`, and the in-process tests drive the controlled loop directly.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import weakref
from typing import Any, Callable, Dict, List

import pytest

from affidavit import _runtime
from affidavit.loop import ControlledLoop, ControlledPolicy
from helpers import CASES, REPO, describe, engine_env, engine_json
from test_cli import ZERO_TOKEN

# in-process runs: under pytest-xdist, only in a child with no execnet thread beside them
pytestmark = pytest.mark.one_thread

CASE = f"{CASES}/case_loop_fidelity.py"
CASE_TESTS = [
    "test_call_later_returns_an_asyncio_timer_handle",
    "test_call_soon_returns_an_asyncio_handle",
    "test_timer_handles_order_and_compare_like_asyncio",
    "test_the_loop_and_policy_are_asyncio_types",
    "test_rate_limiter_lets_ten_through_in_about_a_second",
    "test_time_advances_across_sleep_zero",
]
LIMITER = f"{CASE}::test_rate_limiter_lets_ten_through_in_about_a_second"
DEBUG_CASE = f"{CASES}/case_debug_mode.py"
DEBUG_TESTS = [
    "test_call_soon_from_another_thread_raises_in_debug_mode",
    "test_a_coroutine_is_refused_as_a_callback_in_debug_mode",
    "test_handles_remember_where_they_were_made_in_debug_mode",
    "test_a_slow_callback_is_logged_in_debug_mode",
]
# Small enough that a limiter standing still ends as 'step limit reached' in a second or two.
RUN_LIMITS = ("--timeout", "20", "--max-steps", "200000")


def run_controlled(program: Callable[[], Any], token: str = "", max_steps: int = 200_000) -> Any:
    """Runs program() on a fresh controlled loop under token, with a step limit."""
    _runtime.configure(_runtime.MODE_CONTROLLED, token, max_steps)
    _runtime.recorder_begin(1 << 20)
    loop = ControlledLoop()
    try:
        return loop.run_until_complete(program())
    finally:
        loop.close()
        _runtime.configure(_runtime.MODE_CONTROLLED, "", 0)


# ---- the reference: plain pytest on the stock loop ----




# ---- the same tests under affidavit ----


@pytest.mark.parametrize("name", CASE_TESTS)
def test_each_case_passes_under_the_zero_schedule(name: str) -> None:
    """The zero schedule must not fail (or stall) a test plain pytest passes."""
    _, data = engine_json("explore", f"{CASE}::{name}", "--strategy", "zero", "--runs", "1", *RUN_LIMITS,
                       expect=0, timeout=120)
    assert data["found"] is False and data["outcome"] == "pass", data
    assert data["outcomes"]["pass"] == 1, data


@pytest.mark.parametrize("case,tests", [(CASE, CASE_TESTS), (DEBUG_CASE, DEBUG_TESTS)])
def test_the_cases_pass_under_plain_pytest(case: str, tests: List[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", case, "-q", "-p", "no:cacheprovider", "-p", "no:affidavit"],
        cwd=REPO, env=engine_env(), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, describe(proc)
    assert f"{len(tests)} passed" in proc.stdout, describe(proc)


@pytest.mark.parametrize("name", DEBUG_TESTS)
def test_asyncios_debug_mode_holds_on_the_controlled_loop(name: str) -> None:
    """Debug mode's checks, tracebacks and slow-callback warning, under the zero schedule and the
    portfolio's delays (a stalled step is a slower callback: still logged, still passing)."""
    _, data = engine_json("explore", f"{DEBUG_CASE}::{name}", "--runs", "6", *RUN_LIMITS, expect=0, timeout=120)
    assert data["found"] is False and data["outcomes"]["pass"] == data["runs"], data


def test_the_rate_limiter_passes_every_explored_schedule() -> None:
    _, data = engine_json("explore", LIMITER, "--strategy", "portfolio", "--runs", "12", *RUN_LIMITS,
                       expect=0, timeout=240)
    assert data["found"] is False and data["runs"] == 12, data
    assert data["outcomes"]["pass"] == 12, data


def test_the_rate_limiter_passes_natural_runs() -> None:
    _, data = engine_json("sample", LIMITER, "-n", "3", *RUN_LIMITS, expect=0, timeout=180)
    assert data["runs"] == 3 and data["failed"] == 0, data


def test_an_old_zero_token_still_decodes_and_replays() -> None:
    """A token written before the floor existed decodes unchanged; its runs now get the floor."""
    _, data = engine_json("replay", ZERO_TOKEN, LIMITER, "-n", "2", *RUN_LIMITS, expect=0, timeout=120)
    assert data["runs"] == 2 and data["failed"] == 0 and data["outcomes"]["pass"] == 2, data
    assert data["identical_traces"] is True, data


# ---- handles, in process ----


def test_handles_are_asyncio_handles_with_asyncio_methods() -> None:
    async def main() -> Dict[str, Any]:
        loop = asyncio.get_running_loop()
        soon = loop.call_soon(print)
        later = loop.call_later(2.0, print, "x")
        at = loop.call_at(loop.time() + 1.0, print)
        seen = {
            "types": (type(soon).__mro__, type(later).__mro__, type(at).__mro__),
            "when": (asyncio.TimerHandle.when(later) - loop.time(), later.when() == later._when),
            "scheduled": (later._scheduled, at._scheduled),
            "order": sorted([later, at]) == [at, later],
            "context": later._context is not None and soon._loop is loop,
        }
        asyncio.TimerHandle.cancel(later)  # asyncio's own method, through the slots
        seen["cancel"] = (later.cancelled(), later._callback, later._args, at.cancelled())
        seen["repr"] = (repr(soon), repr(later))
        seen["later_when"] = later.when()  # loop.time() + 2.0: loop.time() is time.monotonic()
        at.cancel()
        return seen

    seen = run_controlled(main)
    soon_mro, later_mro, at_mro = seen["types"]
    assert asyncio.Handle in soon_mro and asyncio.TimerHandle not in soon_mro, soon_mro
    assert asyncio.TimerHandle in later_mro and asyncio.TimerHandle in at_mro, later_mro
    assert seen["when"] == (2.0, True), seen
    assert seen["scheduled"] == (True, True), seen
    assert seen["order"] is True, seen
    assert seen["context"] is True, seen
    assert seen["cancel"] == (True, None, None, False), seen
    assert seen["repr"][0] == "<Handle print()>", seen
    assert seen["repr"][1].startswith(f"<TimerHandle cancelled when={seen['later_when']}"), seen


def test_a_callback_that_raises_reports_an_asyncio_handle() -> None:
    contexts: List[Dict[str, Any]] = []

    def boom() -> None:
        raise ValueError("boom")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, ctx: contexts.append(ctx))
        loop.call_soon(boom)
        loop.call_later(0.01, boom)
        await asyncio.sleep(0.02)

    run_controlled(main)
    assert len(contexts) == 2, contexts
    assert isinstance(contexts[0]["handle"], asyncio.Handle), contexts
    assert isinstance(contexts[1]["handle"], asyncio.TimerHandle), contexts
    assert all(isinstance(c["exception"], ValueError) for c in contexts), contexts
    controlled = [c["message"] for c in contexts]
    contexts.clear()
    stock = asyncio.new_event_loop()
    try:
        stock.run_until_complete(main())
    finally:
        stock.close()
    assert [c["message"] for c in contexts] == controlled, (contexts, controlled)
    assert controlled[0].startswith("Exception in callback ") and "boom()" in controlled[0], controlled


def test_handles_are_freed_and_weakly_referenceable() -> None:
    """A run handle and a cancelled timer keep nothing alive (asyncio's invariant)."""
    refs: List["weakref.ref[Any]"] = []

    class Payload:
        pass

    async def main() -> None:
        loop = asyncio.get_running_loop()
        payload = Payload()
        timer = loop.call_later(100.0, id, payload)
        refs.append(weakref.ref(timer))
        refs.append(weakref.ref(payload))
        timer.cancel()
        del timer, payload
        refs.append(weakref.ref(loop.call_soon(id, 1)))
        await asyncio.sleep(0)

    run_controlled(main)
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_the_loop_and_policy_are_the_types_stock_gives() -> None:
    loop = ControlledLoop()
    try:
        stock = asyncio.new_event_loop()
        try:
            assert isinstance(loop, type(stock)), (type(loop).__mro__, type(stock))
        finally:
            stock.close()
        assert isinstance(loop, asyncio.AbstractEventLoop)
        assert isinstance(loop, asyncio.BaseEventLoop)
        assert isinstance(loop, asyncio.SelectorEventLoop)
    finally:
        loop.close()
    assert isinstance(ControlledPolicy(), type(asyncio.DefaultEventLoopPolicy()))
    assert isinstance(ControlledPolicy(), asyncio.AbstractEventLoopPolicy)


# ---- time: the floor ----


def test_zero_schedule_steps_cost_exactly_the_floor() -> None:
    """Deterministic: n sleep(0) round trips of one task advance loop.time() by n floors."""

    async def main() -> List[float]:
        loop = asyncio.get_running_loop()
        stamps = []
        for _ in range(100):
            stamps.append(loop.time())
            await asyncio.sleep(0)
        return stamps

    stamps = run_controlled(main)
    gaps = {round((b - a) * 1e9) for a, b in zip(stamps, stamps[1:])}
    assert _runtime.STEP_FLOOR_NS > 0
    assert gaps == {_runtime.STEP_FLOOR_NS}, gaps
    again = run_controlled(main)  # the same times on every run, from the run's own clock reading
    assert [t - again[0] for t in again] == [t - stamps[0] for t in stamps]


@pytest.mark.parametrize("strategy", ["zero", "jitter", "pct"])
def test_loop_time_never_goes_back_and_advances_every_step(strategy: str) -> None:
    async def worker(stamps: List[float], n: int) -> None:
        loop = asyncio.get_running_loop()
        for i in range(n):
            stamps.append(loop.time())
            await asyncio.sleep(0 if i % 3 else 0.0005)

    async def main() -> List[float]:
        stamps: List[float] = []
        await asyncio.gather(*(worker(stamps, 30) for _ in range(5)))
        return stamps

    for i in range(3):
        stamps = run_controlled(main, _runtime.portfolio_token(11, i + 1, 100, strategy))
        assert len(stamps) == 150
        assert all(b > a for a, b in zip(stamps, stamps[1:])), stamps


def test_the_rate_limiter_drains_in_process() -> None:
    """The limiter's ten acquires take about a second of loop time instead of standing still."""
    sys.path.insert(0, str(REPO / CASES))
    try:
        import case_loop_fidelity as case
    finally:
        sys.path.pop(0)

    async def main() -> float:
        limiter = case.DripLimiter(5, 1)
        loop = asyncio.get_running_loop()
        start = loop.time()
        await asyncio.gather(*(limiter.acquire() for _ in range(10)))
        return loop.time() - start

    elapsed = run_controlled(main)
    assert 0.9 <= elapsed < 1.1, elapsed


def test_importing_the_runtime_warns_nothing() -> None:
    """Projects with filterwarnings = error import the handle types too: making them may not warn
    (3.12 deprecates immutable types on mutable bases such as asyncio's)."""
    proc = subprocess.run([sys.executable, "-W", "error", "-c", "import affidavit._runtime, affidavit.loop"],
                          cwd=REPO, env=engine_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stderr == "", describe(proc)
