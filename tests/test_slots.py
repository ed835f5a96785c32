"""The slot measurement (issue 21), in-process: a run asked to mark a window of steps records, for
each marked step, how much more the step could cost before any time comparison the loop made
afterwards flips (AFD_EV_SLOT), and the order digest says what the run did without its times.

Sweeping one step's delay from the floor by its measured margins (one run per slot, until no
comparison would flip) must meet every behaviour a brute-force sweep at 1 us steps meets; two
delays inside one slot must behave alike; a run without marks is the run it was before.
"""

from __future__ import annotations

import asyncio
import importlib.util
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List, Tuple

import pytest

from affidavit import _runtime
from affidavit.loop import ControlledLoop

# the runs here are in-process: under pytest-xdist, only in a child with no execnet thread beside them
pytestmark = pytest.mark.one_thread

Program = Callable[[], Awaitable[Any]]
FLOOR = _runtime.STEP_FLOOR_NS
WAKE = _runtime.WAKE_FLOOR_NS  # an idle wake-up's least lateness
UNBOUNDED = 2**64 - 1
REPO = Path(__file__).resolve().parent.parent
# Deadlines are floats (loop.time() + delay): the first nanosecond at which a timer is due moves
# with its creation time one for one only up to a rounding of 1 ns either way, so a measured
# boundary is exact to this much (the loop's clock resolution).
ROUNDING_NS = 2


@dataclass
class Run:
    failed: bool
    events: List[Tuple[Any, ...]]
    slots: List[Tuple[str, int, int, int, int, int]]
    digest: int
    order: int


def run(program: Program, token: str = "", mark_lo: int = 0, mark_n: int = 0) -> Run:
    """Runs program() on a fresh controlled loop under token, measuring steps [mark_lo, +mark_n)."""
    _runtime.configure(_runtime.MODE_CONTROLLED, token, mark_lo=mark_lo, mark_n=mark_n)
    _runtime.recorder_begin(1 << 18)
    random.seed(_runtime.random_seed())
    loop = ControlledLoop()
    failed = False
    try:
        loop.run_until_complete(program())
    except AssertionError:
        failed = True
    finally:
        loop.close()
    _runtime.result(_runtime.OUT_FAIL if failed else _runtime.OUT_PASS, "")
    digest, order = _runtime.trace_digests()
    return Run(failed, _runtime.events(), _runtime.slots(), digest, order)


def delayed(label: str, ordinal: int, cost_ns: int) -> str:
    return _runtime.token_encode("zero", 0, delays=[(label, ordinal, cost_ns)])


def step_index(program: Program, label: str, ordinal: int) -> int:
    """The run-wide index of a task's step in the zero schedule (the steps before it do not
    depend on its own cost, so delaying it keeps its index)."""
    run(program)
    steps = [(s[0], s[1]) for s in _runtime.steps()]
    return steps.index((label, ordinal))


def untimed(events: List[Tuple[Any, ...]]) -> List[Tuple[Any, ...]]:
    """The events without their times (IDLE: its kind only, its a being a lateness), no measurement
    (SLOT, a deadline the stalls brought due: how much stall that took is time)."""
    out: List[Tuple[Any, ...]] = []
    for kind, task, a, b, flags, _vtime in events:
        if kind == _runtime.EV_SLOT or (kind == _runtime.EV_DEADLINE_LATE and flags & _runtime.LATE_FIRED):
            continue
        out.append((kind,) if kind == _runtime.EV_IDLE else (kind, task, a, b, flags))
    return out


def slot_sweep(program: Program, label: str, ordinal: int) -> List[Tuple[int, Run]]:
    """One run per slot of the step's cost: from the floor, each next cost is the last plus its
    measured margin, until no comparison would flip."""
    index = step_index(program, label, ordinal)
    out: List[Tuple[int, Run]] = []
    cost = FLOOR
    while True:
        r = run(program, delayed(label, ordinal, cost), mark_lo=index, mark_n=1)
        assert [s[:4] for s in r.slots] == [(label, ordinal, index, cost)]
        out.append((cost, r))
        margin = r.slots[0][4]
        assert margin >= 1
        if margin == UNBOUNDED:
            return out
        cost += margin
        assert len(out) < 500, "the sweep does not end"


def brute_sweep(program: Program, label: str, ordinal: int, horizon_us: int) -> Dict[int, int]:
    """Order digest -> the first cost (ns) that showed it, over costs 0, 1 us, ..., horizon_us."""
    seen: Dict[int, int] = {}
    for us in range(horizon_us + 1):
        r = run(program, delayed(label, ordinal, us * 1000))
        seen.setdefault(r.order, us * 1000)
    return seen


# ---- the programs ------------------------------------------------------------------------------


def load_window() -> Any:
    spec = importlib.util.spec_from_file_location("window_example", REPO / "examples" / "test_window.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


WINDOW = load_window()


async def window() -> None:
    WINDOW.STATE.clear()
    await WINDOW.test_reader_sees_write()


LOG: List[str] = []


async def timers() -> None:
    """Sleeps of different lengths in two tasks and a call_later, all within 1.6 ms."""
    LOG.clear()

    async def a() -> None:
        await asyncio.sleep(0.001)
        LOG.append("a1")
        await asyncio.sleep(0.0005)
        LOG.append("a2")

    async def b() -> None:
        await asyncio.sleep(0.0012)
        LOG.append("b")

    asyncio.get_running_loop().call_later(0.0011, LOG.append, "cl")
    await asyncio.gather(a(), b())
    assert LOG.index("cl") < LOG.index("a2"), LOG


async def guarded() -> None:
    """A wait_for timeout racing a setter's sleep, and a call_later in between."""
    LOG.clear()
    ev = asyncio.Event()

    async def setter() -> None:
        await asyncio.sleep(0.001)
        ev.set()

    task = asyncio.create_task(setter())
    asyncio.get_running_loop().call_later(0.0011, LOG.append, "cl")
    try:
        await asyncio.wait_for(ev.wait(), 0.0012)
        LOG.append("set")
    except asyncio.TimeoutError:
        LOG.append("timeout")
    await task
    assert LOG[-1] == "set", LOG


async def clock_reader() -> None:
    loop = asyncio.get_running_loop()
    loop.time()  # inside the marked step: its cost does not move this reading
    await asyncio.sleep(0)
    loop.time()
    loop.time()


# ---- (a) the closed-form window -------------------------------------------------------------


def test_window_slot_boundary_is_the_analytic_window() -> None:
    """examples/test_window.py fails exactly when reader#0's step 0 costs 500 us or more. The
    zero run's margin for that step stops short of it, at the loop's last idle jump towards the
    reader's timer: past it the clock would move with the reader's cost instead of with that timer
    (a slot boundary where the order does not change). The sweep's next slots end where each of
    the three floor-cost steps after the writer's wake-up moves past the reader's deadline (its
    callback joins the queue one iteration earlier each time); the writer's wake-up is itself
    WAKE_FLOOR_NS late (no loop wakes at the nanosecond of its deadline), which moves those
    boundaries down by it and adds one more where the reader's deadline falls before that late
    wake-up; the next lands on exactly 500 000 ns, which fails, while 499 999 ns, the last cost of
    the slot before, passes."""
    label = "reader#0"
    index = step_index(window, label, 0)
    zero = run(window, "", mark_lo=index, mark_n=1)
    assert not zero.failed
    (slot,) = zero.slots
    assert slot[:4] == (label, 0, index, FLOOR)
    # The idle jump three floor steps after the writer's timer (its callback, the writer's last
    # step, gather's callback), which is due 1 ms after the reader's step ended and fires WAKE late,
    # to the reader's deadline 1.5 ms after that step began: 500 us - 4 floors - WAKE, + 1 to move
    # past it.
    assert slot[4] == 500_000 - 4 * FLOOR - WAKE + 1

    sweep = slot_sweep(window, label, 0)
    costs = [c for c, _ in sweep]
    assert 500_000 in costs
    first_fail = min(c for c, r in sweep if r.failed)
    assert first_fail == 500_000
    assert costs[:6] == [FLOOR, 500_000 - 3 * FLOOR - WAKE + 1, 500_000 - 2 * FLOOR - WAKE, 500_000 - FLOOR - WAKE,
                         500_000 - WAKE, 500_000]
    orders = [r.order for _, r in sweep[:6]]
    assert orders[0] == orders[1]  # the idle jump's boundary: the same order
    assert len(set(orders[1:])) == 5  # each later boundary: another order
    assert not run(window, delayed(label, 0, 499_999)).failed
    assert run(window, delayed(label, 0, 500_000)).failed
    # Every slot at or past the window fails; every slot before it passes.
    assert all(r.failed == (c >= 500_000) for c, r in sweep)


# ---- (b) inside one slot, one behaviour -----------------------------------------------------


@pytest.mark.parametrize("program,label", [(timers, "timers#0"), (timers, "timers.<locals>.a#0"), (guarded, "guarded#0")])
def test_delays_inside_one_slot_behave_alike(program: Program, label: str) -> None:
    sweep = slot_sweep(program, label, 0)
    assert len(sweep) >= 3  # the programs have several boundaries
    checked = 0
    for cost, r in sweep:
        margin = r.slots[0][4]
        if margin == UNBOUNDED or margin < 2 * ROUNDING_NS + 2:
            continue
        for inside in (cost + margin // 2, cost + margin - 1 - ROUNDING_NS):
            other = run(program, delayed(label, 0, inside))
            assert other.order == r.order, (cost, margin, inside)
            assert untimed(other.events) == untimed(r.events)
            assert other.failed == r.failed
            assert other.digest != r.digest  # the times differ: the digest sees them
        checked += 1
    assert checked >= 2
    # Slots are disjoint and in increasing order of cost.
    costs = [c for c, _ in sweep]
    assert costs == sorted(set(costs))


# ---- (c) the slot sweep meets every behaviour the brute force meets -------------------------


@pytest.mark.parametrize(
    "program,label,horizon_us",
    [(timers, "timers#0", 1700), (timers, "timers.<locals>.a#0", 1700), (guarded, "guarded#0", 1400), (guarded, "guarded.<locals>.setter#0", 1400)],
)
def test_slot_sweep_covers_the_brute_force(program: Program, label: str, horizon_us: int) -> None:
    brute = brute_sweep(program, label, 0, horizon_us)
    sweep = slot_sweep(program, label, 0)
    swept = {r.order for _, r in sweep}
    missed = {order: cost for order, cost in brute.items() if order not in swept}
    assert not missed, f"behaviours first seen at costs {sorted(missed.values())} ns have no slot"
    assert len(brute) >= 3  # the program does have several behaviours for this step
    # Past the last slot's start nothing changes: the brute force's horizon lies beyond it.
    assert sweep[-1][0] <= horizon_us * 1000


# ---- (d) a run without marks ------------------------------------------------------------------


def test_a_run_without_marks_has_no_slot_and_the_same_digest() -> None:
    for program in (window, timers, guarded):
        plain = run(program)
        assert plain.slots == []
        assert all(e[0] != _runtime.EV_SLOT for e in plain.events)
        marked = run(program, mark_lo=0, mark_n=64)
        assert len(marked.slots) == min(64, len(_runtime.steps()))
        assert [e for e in marked.events if e[0] != _runtime.EV_SLOT] == plain.events
        assert (marked.digest, marked.order) == (plain.digest, plain.order)
    # A natural run measures nothing, marks or not.
    _runtime.configure(_runtime.MODE_NATURAL, "", mark_lo=0, mark_n=8)
    _runtime.recorder_begin(1 << 18)
    loop = ControlledLoop()
    try:
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()
    _runtime.result(_runtime.OUT_PASS, "")
    assert _runtime.slots() == []


# ---- the window of marks, the clock reads ---------------------------------------------------


def test_marks_cover_their_window_in_step_order() -> None:
    zero = run(timers, mark_lo=2, mark_n=3)
    steps = _runtime.steps()
    assert [s[2] for s in zero.slots] == [2, 3, 4]
    assert [(s[0], s[1]) for s in zero.slots] == [(st[0], st[1]) for st in steps[2:5]]
    assert all(s[3] == FLOOR for s in zero.slots)
    slot_events = [e for e in zero.events if e[0] == _runtime.EV_SLOT]
    assert [(e[2], e[3]) for e in slot_events] == [(s[1], s[2] + 1) for s in zero.slots]
    assert zero.events[-len(slot_events) :] == slot_events  # recorded at the end of the run
    # A window past the run's last step records nothing.
    assert run(timers, mark_lo=10_000, mark_n=64).slots == []
    with pytest.raises(ValueError):
        _runtime.configure(_runtime.MODE_CONTROLLED, "", mark_lo=0, mark_n=65)


def test_clock_reads_are_counted_per_mark() -> None:
    """loop.time() read after the marked step ended counts for it; a read inside it does not,
    nor for an unmarked step."""
    r = run(clock_reader, mark_lo=0, mark_n=1)
    (slot,) = r.slots
    assert slot[0] == "clock_reader#0" and slot[1] == 0
    assert slot[5] == 2
    assert slot[4] == UNBOUNDED  # no timer: nothing to compare with
