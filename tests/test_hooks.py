"""The recorder's hooks on asyncio's primitives and on time.sleep, in-process.

The hooks must be invisible to the program (locks, events, semaphores and queues behave exactly
as without them) and must record what the analysis needs: who acquired and released which lock,
who set and who saw an event, queue puts and gets, blocking sleeps with their line, and, when every
task is blocked for good, who waits for whom.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, List, Tuple

import pytest

import affidavit
from affidavit import _runtime
from affidavit.loop import ControlledLoop

# in-process runs: under pytest-xdist, only in a child with no execnet thread beside them
pytestmark = pytest.mark.one_thread

SYNC = ["create", "acquire", "release", "set", "clear", "observe", "put", "get", "sem-acquire", "sem-release",
        "check-unset", "check-size"]


def run(program: Any, mode: int = _runtime.MODE_CONTROLLED) -> Any:
    affidavit.install()
    _runtime.configure(mode, "")
    _runtime.recorder_begin(1 << 20)
    loop = ControlledLoop()
    try:
        return loop.run_until_complete(program())
    finally:
        # as asyncio.run does: tasks left blocked (a deadlock) are cancelled and finish here
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()


def short(label: str) -> str:
    """"test_x.<locals>.prog.<locals>.worker#0" -> "worker#0"."""
    return label.rsplit(".", 1)[-1]


def line_of(text: str) -> int:
    """The line of this file that contains text (so expectations survive edits above them)."""
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def sync_events() -> List[Tuple[str, str, str]]:
    """(task label, action, object label) of every recorded SYNC event but creations."""
    return [(short(label), SYNC[flags], obj) for kind, label, _a, obj, flags, _ in _runtime.events()
            if kind == _runtime.EV_SYNC and flags != 0]


def test_lock_transitions_name_the_holder() -> None:
    async def prog() -> None:
        lock = asyncio.Lock()

        async def worker() -> None:
            async with lock:
                await asyncio.sleep(0.001)

        await asyncio.gather(worker(), worker())
        assert not lock.locked() and "unlocked" in repr(lock)

    run(prog)
    events = [(t, a) for t, a, obj in sync_events() if obj.startswith("Lock@")]
    assert events == [("worker#0", "acquire"), ("worker#0", "release"), ("worker#1", "acquire"),
                      ("worker#1", "release")]
    labels = {obj for _, _, obj in sync_events()}
    assert labels == {f"Lock@tests/test_hooks.py:{line_of('lock = asyncio.Lock()')}"}


def test_event_set_and_observation() -> None:
    async def prog() -> bool:
        ev = asyncio.Event()

        async def waiter() -> bool:
            return await ev.wait()

        async def setter() -> None:
            await asyncio.sleep(0.001)
            assert not ev.is_set()
            ev.set()

        got, _ = await asyncio.gather(waiter(), setter())
        return got and ev.is_set()

    assert run(prog) is True
    acts = [(t, a) for t, a, _ in sync_events()]
    assert ("setter#0", "check-unset") in acts
    assert acts.index(("setter#0", "check-unset")) < acts.index(("setter#0", "set"))
    assert ("prog#0", "observe") in acts  # ev.is_set() after the gather


def test_queue_operations_are_recorded_and_queues_still_work() -> None:
    class Tagged(asyncio.Queue):  # a subclass keeps working through the hooks
        def _put(self, item: Any) -> None:
            super()._put(("tag", item))

    async def prog() -> List[Any]:
        q: asyncio.Queue = Tagged()
        await q.put(1)
        q.put_nowait(2)
        out = [await q.get(), q.get_nowait()]
        assert q.empty() and q.qsize() == 0
        with pytest.raises(asyncio.QueueEmpty):
            q.get_nowait()
        return out

    assert run(prog) == [("tag", 1), ("tag", 2)]
    acts = [a for _, a, obj in sync_events() if obj.startswith("Tagged@")]
    assert acts.count("put") == 2 and acts.count("get") == 2  # the failed get_nowait is not a get
    assert "check-size" in acts
    # the queue's internal `_finished` event is bookkeeping, not the program's: not recorded
    assert {obj for _, _, obj in sync_events()} == {f"Tagged@tests/test_hooks.py:{line_of('q: asyncio.Queue = Tagged()')}"}


def test_semaphore_acquire_and_release() -> None:
    async def prog() -> None:
        sem = asyncio.Semaphore(2)
        async with sem:
            async with sem:
                assert sem.locked()

    run(prog)
    assert [a for _, a, _ in sync_events()] == ["sem-acquire", "sem-acquire", "sem-release", "sem-release"]


def test_objects_made_on_one_line_get_distinct_labels() -> None:
    async def prog() -> None:
        a, b = asyncio.Lock(), asyncio.Lock()
        async with a, b:
            pass

    run(prog)
    line = line_of("a, b = asyncio.Lock(), asyncio.Lock()")
    assert sorted({obj for _, _, obj in sync_events()}) == [f"Lock@tests/test_hooks.py:{line}",
                                                            f"Lock@tests/test_hooks.py:{line}#2"]


def test_time_sleep_in_a_step_is_virtual_cost_with_its_line() -> None:
    assert threading.active_count() == 1
    async def prog() -> Tuple[float, float, float]:
        loop = asyncio.get_running_loop()
        real = time.CLOCK_MONOTONIC  # read through clock_gettime, which affidavit leaves real
        t0, p0, w0 = loop.time(), time.perf_counter(), time.clock_gettime(real)
        time.sleep(0.25)  # blocking: the loop stalls for 250 ms
        await asyncio.sleep(0)
        return loop.time() - t0, time.perf_counter() - p0, time.clock_gettime(real) - w0

    virtual, perf, wall = run(prog)
    assert virtual == pytest.approx(0.25, abs=1e-6)
    assert perf == pytest.approx(virtual, abs=1e-5), "perf_counter tells the loop's story in a controlled run"
    assert wall < 0.2, "under the controlled loop the sleep is virtual"
    blocks = [(short(label), site) for kind, label, _a, site, _f, _ in _runtime.events() if kind == _runtime.EV_BLOCK]
    assert blocks == [("prog#0", f"tests/test_hooks.py:{line_of('time.sleep(0.25)  # blocking')}")]


def test_time_sleep_outside_a_run_is_real() -> None:
    affidavit.install()
    t0 = time.perf_counter()
    time.sleep(0.05)
    assert time.perf_counter() - t0 >= 0.05


@pytest.mark.parametrize("mode", [_runtime.MODE_CONTROLLED, _runtime.MODE_NATURAL])
def test_a_deadlock_ends_the_run_with_its_wait_for_graph(mode: int) -> None:
    assert threading.active_count() == 1
    async def prog() -> None:
        a, b = asyncio.Lock(), asyncio.Lock()

        async def one(x: asyncio.Lock, y: asyncio.Lock) -> None:
            async with x:
                await asyncio.sleep(0.001)
                async with y:
                    pass

        await asyncio.gather(one(a, b), one(b, a))

    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="deadlock"):
        run(prog, mode)
    assert time.perf_counter() - t0 < 5
    assert _runtime.trace_info()["flags"] & _runtime.TRACE_DEADLOCK
    waits = [(label, a, b) for kind, label, a, b, _f, _ in _runtime.events() if kind == _runtime.EV_WAITFOR]
    by_task = {short(label): (obj, holder) for label, obj, holder in waits}
    assert by_task["one#0"][0] != 0 and by_task["one#1"][0] != 0
    assert by_task["one#0"][0] != by_task["one#1"][0]


def test_a_wait_with_a_timer_pending_is_not_a_deadlock() -> None:
    async def prog() -> str:
        ev = asyncio.Event()
        asyncio.get_running_loop().call_later(0.01, ev.set)
        await ev.wait()
        return "woken"

    assert run(prog) == "woken"
    assert not _runtime.trace_info()["flags"] & _runtime.TRACE_DEADLOCK


def test_primitives_made_before_the_hooks_keep_working() -> None:
    import subprocess
    import sys

    code = (
        "import asyncio\n"
        "lock = asyncio.Lock(); ev = asyncio.Event(); ev.set(); sem = asyncio.Semaphore(2)\n"
        "import affidavit\n"
        "affidavit.install()\n"
        "async def main():\n"
        "    async with lock:\n"
        "        assert lock.locked()\n"
        "    async with sem:\n"
        "        assert sem._value == 1\n"
        "    assert ev.is_set() and not lock.locked()\n"
        "asyncio.run(main())\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "ok", proc.stderr
