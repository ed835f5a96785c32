"""The controlled loop, in-process: soundness, faithfulness to the stock loop, exact replay.

These tests drive ControlledLoop directly (no fork server), so thousands of schedules run in
seconds. Tokens come from the same portfolio the engine's explore uses.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any, Awaitable, Callable, List, Optional

import pytest

from affidavit import _runtime
from affidavit.loop import ControlledLoop

# in-process runs: under pytest-xdist, only in a child with no execnet thread beside them
pytestmark = pytest.mark.one_thread

Program = Callable[[], Awaitable[Any]]
STRATEGIES = ["zero", "jitter", "pct"]


def run_controlled(program: Program, token: str = "", loop_cls: type = ControlledLoop) -> Any:
    """Runs program() on a fresh controlled loop under token, seeding `random` like a child does."""
    _runtime.configure(_runtime.MODE_CONTROLLED, token)
    _runtime.recorder_begin(1 << 20)
    random.seed(_runtime.random_seed())
    loop = loop_cls()
    try:
        return loop.run_until_complete(program())
    finally:
        loop.close()


def tokens(strategy: str, n: int, est_steps: int = 40) -> List[str]:
    return [_runtime.portfolio_token(7, i, est_steps, strategy) for i in range(n)]


# ---- Soundness: programs correct by asyncio's FIFO guarantee never fail ------------------------


async def deposit_then_audit() -> bool:
    """call_soon(deposit); call_soon(audit): the audit must see the deposit."""
    loop = asyncio.get_running_loop()
    state = {"balance": 0}
    seen: "asyncio.Future[bool]" = loop.create_future()

    def deposit() -> None:
        state["balance"] += 10

    def audit() -> None:
        seen.set_result(state["balance"] == 10)

    loop.call_soon(deposit)
    loop.call_soon(audit)
    return await seen


async def sleep0_alternation() -> bool:
    """Two tasks looping on sleep(0) strictly alternate."""
    log: List[str] = []

    async def spin(name: str) -> None:
        for _ in range(25):
            log.append(name)
            await asyncio.sleep(0)

    await asyncio.gather(spin("a"), spin("b"))
    return log == ["a", "b"] * 25


async def await_writer_then_read() -> bool:
    """A reader that awaits the writer task before reading always sees the write."""
    state: dict = {}

    async def writer() -> None:
        await asyncio.sleep(random.uniform(0, 0.002))
        await asyncio.sleep(0)
        state["x"] = 1

    task = asyncio.create_task(writer())
    await asyncio.sleep(random.uniform(0, 0.002))
    await task
    return state.get("x") == 1


SOUND = [deposit_then_audit, sleep0_alternation, await_writer_then_read]


@pytest.mark.parametrize("program", SOUND, ids=lambda p: p.__name__)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_fifo_correct_programs_never_fail(program: Program, strategy: str) -> None:
    failures = [t for t in tokens(strategy, 2000) if run_controlled(program, t) is not True]
    assert failures == [], f"{len(failures)} schedules broke a FIFO guarantee, e.g. {failures[0]}"


class ReorderingLoop(ControlledLoop):
    """A deliberately unsound loop: it defers a random half of the call_soon callbacks behind the
    timers, the kind of reordering that queue-shuffling tools do. The oracles must catch it."""

    rng = random.Random(1234)  # its own stream: the program's `random` stays the schedule's

    def call_soon(self, callback: Any, *args: Any, context: Any = None) -> Any:
        if self.rng.random() < 0.5:
            return self.call_later(1e-9, callback, *args, context=context)
        return super().call_soon(callback, *args, context=context)


@pytest.mark.parametrize("program", [deposit_then_audit, sleep0_alternation], ids=lambda p: p.__name__)
def test_soundness_oracles_catch_a_reordering_loop(program: Program) -> None:
    results = [run_controlled(program, t, ReorderingLoop) for t in tokens("jitter", 50)]
    assert False in results


# ---- Faithfulness: with zero costs, the same step order as the stock loop ---------------------


class StepLog:
    """Mixin recording which task (by coroutine name) or callback each handle runs."""

    log: List[str]

    def _wrap(self, cb: Any) -> Any:
        owner = getattr(cb, "__self__", None)
        if isinstance(owner, asyncio.Task):
            name = owner.get_coro().__qualname__
        else:
            name = getattr(cb, "__qualname__", type(cb).__name__)
        log = self.log

        def run(*args: Any) -> Any:
            log.append(name)
            return cb(*args)

        return run

    def call_soon(self, cb: Any, *args: Any, context: Any = None) -> Any:
        return super().call_soon(self._wrap(cb), *args, context=context)  # type: ignore[misc]

    def call_at(self, when: float, cb: Any, *args: Any, context: Any = None) -> Any:
        return super().call_at(when, self._wrap(cb), *args, context=context)  # type: ignore[misc]

    def call_later(self, delay: float, cb: Any, *args: Any, context: Any = None) -> Any:
        return self.call_at(self.time() + delay, cb, *args, context=context)  # type: ignore[attr-defined]


class StockLogged(StepLog, asyncio.SelectorEventLoop):  # type: ignore[misc]
    def __init__(self) -> None:
        self.log = []
        super().__init__()


class ControlledLogged(StepLog, ControlledLoop):
    def __init__(self) -> None:
        self.log = []
        super().__init__()


async def timers() -> None:
    async def sleeper(d: float) -> None:
        await asyncio.sleep(d)

    await asyncio.gather(sleeper(0.06), sleeper(0.02), sleeper(0.04), sleeper(0))


async def gather_interleaving() -> None:
    async def worker(n: int) -> None:
        for _ in range(n):
            await asyncio.sleep(0)

    await asyncio.gather(worker(3), worker(1), worker(2))


async def taskgroup() -> None:
    async def child(d: float) -> None:
        await asyncio.sleep(d)

    async def failing() -> None:
        await asyncio.sleep(0.02)
        raise ValueError("boom")

    try:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(child(0.01))
            tg.create_task(failing())
            tg.create_task(child(0.05))
    except* ValueError:
        pass


async def event() -> None:
    ev = asyncio.Event()

    async def waiter() -> None:
        await ev.wait()

    async def setter() -> None:
        await asyncio.sleep(0.02)
        ev.set()

    await asyncio.gather(waiter(), waiter(), setter())


async def queue() -> None:
    q: asyncio.Queue = asyncio.Queue(maxsize=2)

    async def producer() -> None:
        for i in range(6):
            await q.put(i)

    async def consumer() -> None:
        for _ in range(6):
            await q.get()
            await asyncio.sleep(0)

    await asyncio.gather(consumer(), producer())


async def cancellation() -> None:
    async def victim() -> None:
        try:
            await asyncio.sleep(1)
        except asyncio.CancelledError:
            await asyncio.sleep(0)
            raise

    task = asyncio.create_task(victim())
    await asyncio.sleep(0.02)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    try:
        await asyncio.wait_for(asyncio.sleep(1), 0.03)
    except asyncio.TimeoutError:
        pass


FAITHFUL = [timers, gather_interleaving, taskgroup, event, queue, cancellation]


def step_order(loop_cls: type, program: Program) -> List[str]:
    loop = loop_cls()
    try:
        loop.run_until_complete(program())
        return list(loop.log)
    finally:
        loop.close()


@pytest.mark.parametrize("program", FAITHFUL, ids=lambda p: p.__name__)
def test_zero_cost_step_order_matches_the_stock_loop(program: Program) -> None:
    _runtime.configure(_runtime.MODE_CONTROLLED, "")
    _runtime.recorder_begin(1 << 20)
    stock = step_order(StockLogged, program)
    controlled = step_order(ControlledLogged, program)
    assert len(stock) > 3
    assert controlled == stock


@pytest.mark.parametrize("program", FAITHFUL, ids=lambda p: p.__name__)
def test_natural_mode_step_order_matches_the_stock_loop(program: Program) -> None:
    _runtime.configure(_runtime.MODE_NATURAL, "")
    _runtime.recorder_begin(1 << 20)
    assert step_order(ControlledLogged, program) == step_order(StockLogged, program)


# ---- The model: virtual time, costs, lateness ------------------------------------------------


def test_virtual_clock_jumps_without_waiting() -> None:
    async def long_sleep() -> float:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        await asyncio.sleep(3600)
        return loop.time() - t0

    import time

    wall = time.perf_counter()
    elapsed = run_controlled(long_sleep, "")
    assert time.perf_counter() - wall < 1.0
    assert 3600 <= elapsed < 3600.001


def test_a_step_cost_moves_later_timers() -> None:
    """A pct delay on the first step makes a timer created later expire after an earlier one's
    deadline plus the delay: the order of two timers changes only through time."""

    async def race() -> List[str]:
        order: List[str] = []

        async def slow() -> None:
            await asyncio.sleep(0.001)
            order.append("slow")

        t = asyncio.create_task(slow())
        await asyncio.sleep(0.005)
        order.append("main")
        await t
        return order

    outcomes = {tuple(run_controlled(race, t)) for t in tokens("pct", 60, est_steps=6)}
    assert ("slow", "main") in outcomes
    assert ("main", "slow") in outcomes
    assert run_controlled(race, tokens("zero", 1)[0]) == ["slow", "main"]


def test_replay_of_one_token_is_exact() -> None:
    async def noisy() -> List[Any]:
        out: List[Any] = []
        start = asyncio.get_running_loop().time()  # as time.monotonic(): from the run's real reading

        async def w(i: int) -> None:
            for _ in range(5):
                await asyncio.sleep(random.random() * 0.001)
                out.append((i, round(asyncio.get_running_loop().time() - start, 9)))

        await asyncio.gather(*(w(i) for i in range(4)))
        return out

    for t in tokens("jitter", 5) + tokens("pct", 5):
        first = run_controlled(noisy, t)
        steps = _runtime.steps()
        assert run_controlled(noisy, t) == first
        assert _runtime.steps() == steps


def test_steps_are_labelled_by_coroutine_and_creation_order() -> None:
    async def child() -> None:
        await asyncio.sleep(0)

    async def parent() -> None:
        await asyncio.gather(child(), child())

    run_controlled(parent, "")
    labels = {s[0] for s in _runtime.steps()}
    assert {"test_steps_are_labelled_by_coroutine_and_creation_order.<locals>.parent#0",
            "test_steps_are_labelled_by_coroutine_and_creation_order.<locals>.child#0",
            "test_steps_are_labelled_by_coroutine_and_creation_order.<locals>.child#1"} <= labels
    sites = {s[4] for s in _runtime.steps() if s[0].endswith("child#0") and s[4]}
    assert any(site.startswith("tests/test_loop.py:") for site in sites)


def test_real_file_descriptors_still_work() -> None:
    async def pipe_roundtrip() -> bytes:
        import os

        loop = asyncio.get_running_loop()
        r, w = os.pipe()
        got: "asyncio.Future[bytes]" = loop.create_future()
        loop.add_reader(r, lambda: got.set_result(os.read(r, 100)))
        loop.call_later(0.01, os.write, w, b"ping")
        try:
            return await asyncio.wait_for(got, 5)
        finally:
            loop.remove_reader(r)
            os.close(r)
            os.close(w)

    assert run_controlled(pipe_roundtrip, "") == b"ping"


def test_threads_calling_back_still_work() -> None:
    async def in_executor() -> int:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, sum, [1, 2, 3])

    assert run_controlled(in_executor, "") == 6


def test_callback_exceptions_go_to_the_exception_handler() -> None:
    async def prog() -> List[str]:
        loop = asyncio.get_running_loop()
        seen: List[str] = []
        loop.set_exception_handler(lambda l, ctx: seen.append(str(ctx["exception"])))

        def bad() -> None:
            raise RuntimeError("in a callback")

        loop.call_soon(bad)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return seen

    assert run_controlled(prog, "") == ["in a callback"]


def test_cancelled_handles_and_timers_do_not_run() -> None:
    async def prog() -> List[str]:
        loop = asyncio.get_running_loop()
        ran: List[str] = []
        h = loop.call_soon(ran.append, "soon")
        t = loop.call_later(0.01, ran.append, "later")
        keep = loop.call_later(0.02, ran.append, "kept")
        h.cancel()
        t.cancel()
        assert h.cancelled() and t.cancelled() and not keep.cancelled()
        await asyncio.sleep(0.03)
        return ran

    assert run_controlled(prog, "") == ["kept"]


def test_asyncio_run_and_policy_install_give_a_controlled_loop() -> None:
    import affidavit

    async def which() -> str:
        return type(asyncio.get_running_loop()).__name__

    old = asyncio.get_event_loop_policy()
    affidavit.install()
    try:
        assert asyncio.run(which()) == "ControlledLoop"
    finally:
        asyncio.set_event_loop_policy(old)


def test_bad_tokens_are_refused_by_the_runtime() -> None:
    with pytest.raises(ValueError, match="checksum|malformed"):
        _runtime.configure(_runtime.MODE_CONTROLLED, tokens("jitter", 2)[1][:-2] + "aa")
    with pytest.raises(ValueError, match="another affidavit format version"):
        _runtime.configure(_runtime.MODE_CONTROLLED, "afd9:aaaa")
    _runtime.configure(_runtime.MODE_NATURAL, "")


def test_annotations_cost_nothing_outside_a_recording() -> None:
    from affidavit import assertion, operation

    @operation("op", resource="r", access="write")
    async def op() -> int:
        return 1

    async def prog() -> int:
        with assertion("r"):
            return await op()

    assert asyncio.run(prog()) == 1
    with pytest.raises(TypeError):
        operation("x", resource="r")(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        operation("x", resource="r", access="modify")


# ---- The recorder: operations, assertions, bounds, uncontrolled sources ------------------------


def test_operations_and_assertions_are_recorded_for_their_task() -> None:
    from affidavit import assertion, operation

    state: dict = {}

    @operation("write_status", resource="report.status", access="write")
    async def write() -> None:
        await asyncio.sleep(0)
        state["status"] = "done"

    @operation("read_status", resource="report.status", access="read")
    async def read() -> str:
        return state.get("status", "")

    async def prog() -> str:
        await asyncio.create_task(write())
        with assertion("report.status"):
            return await read()

    assert run_controlled(prog, "") == "done"
    ops = [(k, label.split(".")[-1], a, b, f) for k, label, a, b, f, _ in _runtime.events()
           if k in (_runtime.EV_OP_BEGIN, _runtime.EV_OP_END, _runtime.EV_ASSERT_BEGIN, _runtime.EV_ASSERT_END)]
    assert ops == [
        (_runtime.EV_OP_BEGIN, "write#0", "write_status", "report.status", 1),
        (_runtime.EV_OP_END, "write#0", "write_status", "report.status", 1),
        (_runtime.EV_ASSERT_BEGIN, "prog#0", 0xFFFFFFFF, "report.status", 0),
        (_runtime.EV_OP_BEGIN, "prog#0", "read_status", "report.status", 0),
        (_runtime.EV_OP_END, "prog#0", "read_status", "report.status", 0),
        (_runtime.EV_ASSERT_END, "prog#0", 0xFFFFFFFF, "report.status", 1),
    ]


def test_a_full_recording_is_truncated_and_says_so() -> None:
    async def many_steps() -> None:
        for _ in range(60000):
            await asyncio.sleep(0)

    _runtime.configure(_runtime.MODE_CONTROLLED, "")
    _runtime.recorder_begin(1 << 20)  # about 22,000 events fit
    loop = ControlledLoop()
    try:
        loop.run_until_complete(many_steps())
    finally:
        loop.close()
    info = _runtime.trace_info()
    assert info["truncated"] is True
    assert info["steps"] >= 60000
    assert info["dropped"] > 0 and info["events"] + info["dropped"] >= info["steps"]


def test_a_thread_calling_back_is_marked_uncontrolled() -> None:
    import time

    def slow_sum(xs: List[int]) -> int:
        time.sleep(0.05)  # finishes after the loop went idle: the thread decides when it wakes it
        return sum(xs)

    async def in_executor() -> int:
        return await asyncio.get_running_loop().run_in_executor(None, slow_sum, [1, 2])

    assert run_controlled(in_executor, "") == 3
    assert _runtime.trace_info()["flags"] & _runtime.TRACE_THREADS
    run_controlled(deposit_then_audit, "")
    assert not _runtime.trace_info()["flags"] & _runtime.TRACE_THREADS


def test_the_step_limit_stops_a_run() -> None:
    async def forever() -> None:
        while True:
            await asyncio.sleep(0)

    _runtime.configure(_runtime.MODE_CONTROLLED, "", 1000)
    _runtime.recorder_begin(1 << 20)
    loop = ControlledLoop()
    try:
        with pytest.raises(RuntimeError, match="step limit"):
            loop.run_until_complete(forever())
    finally:
        loop.close()
        _runtime.configure(_runtime.MODE_CONTROLLED, "", 0)
    assert _runtime.trace_info()["steps"] == 1000


def test_an_explicit_delay_on_one_step_decides_the_order() -> None:
    """Explicit delays are addressed by (task label, step ordinal) and override the base strategy:
    delaying the test's first step past the refresher's timer makes the read stale, exactly when
    the delay exceeds the 4 ms window, and delaying another step does nothing."""

    async def refresh(state: dict) -> None:
        await asyncio.sleep(0.001)
        state["token"] = "fresh"

    async def main() -> str:
        state = {"token": "stale"}
        t = asyncio.create_task(refresh(state))
        await asyncio.sleep(0.005)
        seen = state["token"]
        await t
        return seen

    label = "test_an_explicit_delay_on_one_step_decides_the_order.<locals>.main#0"
    other = "test_an_explicit_delay_on_one_step_decides_the_order.<locals>.refresh#0"

    def with_delay(lbl: str, ordinal: int, ns: int) -> str:
        return run_controlled(main, _runtime.token_encode("zero", 0, delays=[(lbl, ordinal, ns)]))

    assert with_delay(label, 0, 0) == "fresh"
    assert with_delay(label, 0, 3_900_000) == "fresh"
    assert with_delay(label, 0, 4_100_000) == "stale"
    assert with_delay(label, 1, 9_000_000) == "fresh"
    assert with_delay(other, 1, 9_000_000) == "fresh"
    costs = {(s[0], s[1]): s[3] for s in _runtime.steps()}
    # An undelayed step costs the floor every step costs (a real step always takes some time).
    assert costs[(other, 1)] == 9_000_000 and costs[(label, 0)] == _runtime.STEP_FLOOR_NS


# ---- The running loop, answered inside a step without a system call ---------------------------


def test_running_loop_answers_match_asyncio_in_every_case() -> None:
    """Inside a controlled step the running loop is given without getpid(); every other case
    (no loop, a loop unset by the program, another thread's loop, a forked child) gets asyncio's
    own answer."""
    import os
    import threading

    from affidavit.loop import install

    install()
    assert asyncio.events._get_running_loop is asyncio._get_running_loop  # both names replaced
    assert asyncio.events._get_running_loop() is None
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()

    async def prog() -> List[Any]:
        loop = asyncio.get_running_loop()
        seen: List[Any] = [asyncio.events._get_running_loop() is loop, asyncio.Queue()._get_loop() is loop]
        asyncio.events._set_running_loop(None)  # what sync bridges do before running a nested loop
        seen.append(asyncio.events._get_running_loop())
        asyncio.events._set_running_loop(loop)
        seen.append(asyncio.events._get_running_loop() is loop)

        other: List[Any] = []

        async def which() -> Any:
            return asyncio.get_running_loop()

        def in_thread() -> None:
            other.append(asyncio.events._get_running_loop())
            inner = asyncio.new_event_loop()
            other.append(inner.run_until_complete(which()) is inner)
            inner.close()

        t = threading.Thread(target=in_thread)
        t.start()
        t.join()
        seen.append(other)
        seen.append(asyncio.events._get_running_loop() is loop)

        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # asyncio forgets the running loop in a forked child
            os.write(w, b"none" if asyncio.events._get_running_loop() is None else b"loop")
            os._exit(0)
        os.close(w)
        os.waitpid(pid, 0)
        with os.fdopen(r, "rb") as f:
            seen.append(f.read())
        return seen

    assert run_controlled(prog) == [True, True, None, True, [None, True], True, b"none"]
    assert asyncio.events._get_running_loop() is None
