"""Inputs of tests/test_loop_fidelity.py: asyncio's debug mode, as tests of libraries look at it.

In debug mode (asyncio.run(debug=True), loop.set_debug(True), PYTHONASYNCIODEBUG, -X dev) the stock
loop refuses a call_soon from another thread and a coroutine given as a callback, records where
each handle was made, and logs a callback that ran longer than slow_callback_duration. Each test
passes under plain pytest on the stock loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import List


def test_call_soon_from_another_thread_raises_in_debug_mode() -> None:
    async def main() -> List[str]:
        loop = asyncio.get_running_loop()
        errors: List[str] = []

        def from_thread() -> None:
            try:
                loop.call_soon(lambda: None)
            except RuntimeError as exc:
                errors.append(str(exc))

        th = threading.Thread(target=from_thread)
        th.start()
        await asyncio.to_thread(th.join, 20)
        return errors

    errors = asyncio.run(main(), debug=True)
    assert len(errors) == 1 and "thread" in errors[0], errors


def test_a_coroutine_is_refused_as_a_callback_in_debug_mode() -> None:
    async def job() -> None:
        pass

    async def main() -> List[str]:
        loop = asyncio.get_running_loop()
        refused = []
        for schedule in (loop.call_soon, lambda cb: loop.call_later(0.01, cb), lambda cb: loop.call_at(loop.time(), cb),
                         loop.call_soon_threadsafe):
            try:
                schedule(job)
            except TypeError as exc:
                refused.append(str(exc))
        return refused

    refused = asyncio.run(main(), debug=True)
    assert len(refused) == 4 and all("coroutines cannot be used" in r for r in refused), refused
    assert "call_at()" in refused[1] and "call_soon_threadsafe()" in refused[3], refused


def test_handles_remember_where_they_were_made_in_debug_mode() -> None:
    async def main() -> List[str]:
        loop = asyncio.get_running_loop()
        loop.set_debug(True)
        made = [loop.call_soon(print), loop.call_later(5, print)]
        lines = [f"{h._source_traceback[-1][0]}:{h._source_traceback[-1][2]}" for h in made]
        for h in made:
            h.cancel()
        loop.set_debug(False)
        lines.append(repr(loop.call_soon(print)._source_traceback))
        return lines

    lines = asyncio.run(main())
    assert lines[0].endswith("case_debug_mode.py:main") and lines[1].endswith("case_debug_mode.py:main"), lines
    assert lines[2] == "None", lines


def test_a_slow_callback_is_logged_in_debug_mode(caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.WARNING, logger="asyncio")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.slow_callback_duration = 0.05
        done = asyncio.Event()

        def blocking() -> None:
            time.sleep(0.1)
            done.set()

        loop.call_soon(blocking)
        await asyncio.wait_for(done.wait(), 20)

    asyncio.run(main(), debug=True)
    slow = [r.getMessage() for r in caplog.records if "blocking" in r.getMessage()]
    assert slow and slow[0].startswith("Executing <Handle") and " took 0.1" in slow[0], slow
