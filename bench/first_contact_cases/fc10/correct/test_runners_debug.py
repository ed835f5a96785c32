"""Plain sync tests that drive asyncio themselves, in the style of a CLI whose
commands wrap ``asyncio.run`` (click/typer apps) and of tooling that turns on
debug mode: asyncio.run, asyncio.Runner (3.11) with state kept across runs,
a context passed to Runner.run, shutdown of async generators at exit, and the
slow-callback report and thread check of debug mode.
"""
import asyncio
import contextvars
import logging
import threading
import time

import pytest

tenant = contextvars.ContextVar("tenant", default="none")


async def sync_command(n):
    await asyncio.sleep(0.01)
    return [i * 2 for i in range(n)]


def test_asyncio_run_from_a_sync_test_returns_and_closes_its_loop():
    holder = {}

    async def main():
        holder["loop"] = asyncio.get_running_loop()
        return await sync_command(3)

    assert asyncio.run(main()) == [0, 2, 4]
    assert holder["loop"].is_closed()
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()          # nothing left running


def test_runner_keeps_loop_and_tasks_between_runs():
    with asyncio.Runner() as runner:
        loop = runner.get_loop()

        async def start_background():
            ev = asyncio.Event()

            async def bg():
                await ev.wait()
                return "bg-finished"
            return ev, asyncio.create_task(bg())

        ev, task = runner.run(start_background())
        assert not task.done()              # survives between run() calls

        async def finish():
            assert asyncio.get_running_loop() is loop
            ev.set()
            return await task
        assert runner.run(finish()) == "bg-finished"
    assert loop.is_closed()


def test_runner_run_with_explicit_context():
    ctx = contextvars.copy_context()
    ctx.run(tenant.set, "acme")

    async def who():
        await asyncio.sleep(0)
        return tenant.get()

    with asyncio.Runner() as runner:
        assert runner.run(who(), context=ctx) == "acme"
        assert runner.run(who()) == "none"


def test_unfinished_async_generator_is_closed_when_run_exits():
    log = []
    kept = []

    async def ticker():
        try:
            while True:
                yield len(log)
                await asyncio.sleep(0)
        finally:
            log.append("ticker closed")

    async def main():
        gen = ticker()
        kept.append(gen)                    # keep it alive: not GC-finalized
        assert await anext(gen) == 0
        return "main done"

    assert asyncio.run(main()) == "main done"
    assert log == ["ticker closed"]        # shutdown_asyncgens() closed it


def test_debug_mode_reports_slow_callbacks_and_foreign_thread_calls(caplog):
    caplog.set_level(logging.WARNING, logger="asyncio")
    with asyncio.Runner(debug=True) as runner:
        loop = runner.get_loop()
        assert loop.get_debug()
        loop.slow_callback_duration = 0.05

        async def main():
            done = asyncio.Event()

            def blocking_callback():
                time.sleep(0.2)             # blocks the loop for >= 0.2 s
                done.set()
            asyncio.get_running_loop().call_soon(blocking_callback)
            await asyncio.wait_for(done.wait(), 20)

            errors = []

            def from_thread():
                try:
                    loop.call_soon(lambda: None)
                except RuntimeError as exc:
                    errors.append(str(exc))
            th = threading.Thread(target=from_thread)
            th.start()
            await asyncio.to_thread(th.join, 20)
            return errors

        errors = runner.run(main())
    assert errors and "thread" in errors[0].lower()
    slow = [r.getMessage() for r in caplog.records
            if r.name == "asyncio" and "blocking_callback" in r.getMessage()]
    assert slow and "took" in slow[0]
