"""Synchronous tests that drive asyncio themselves, modelled on a CLI tool whose
``main()`` calls ``asyncio.run`` and whose tests check exit codes, printed
output (``capsys``) and log output (``caplog``), plus a long-lived
``asyncio.Runner`` reused across several calls as an embedding application
would.
"""

import asyncio
import logging
import sys
import time


log = logging.getLogger("fc8.cli")


async def sync_mirror(sources: list[str], dest: dict[str, str], concurrency: int = 3) -> int:
    sem = asyncio.Semaphore(concurrency)
    copied = 0

    async def copy_one(name: str) -> None:
        nonlocal copied
        async with sem:
            await asyncio.sleep(0.001)
            dest[name] = name[::-1]
            copied += 1
            log.info("copied %s", name)

    await asyncio.gather(*(copy_one(s) for s in sources))
    return copied


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: mirror NAME...", file=sys.stderr)
        return 2
    dest: dict[str, str] = {}
    n = asyncio.run(asyncio.wait_for(sync_mirror(argv, dest), timeout=30))
    for name in sorted(dest):
        print(f"{name} -> {dest[name]}")
    print(f"{n} files mirrored")
    return 0


def test_main_prints_summary(capsys):
    assert main(["beta", "alpha", "gamma"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "alpha -> ahpla",
        "beta -> ateb",
        "gamma -> ammag",
        "3 files mirrored",
    ]
    assert err == ""


def test_main_logs_each_copy(caplog):
    with caplog.at_level(logging.INFO, logger="fc8.cli"):
        main([f"f{i}" for i in range(6)])
    copied = sorted(r.getMessage() for r in caplog.records if r.name == "fc8.cli")
    assert copied == sorted(f"copied f{i}" for i in range(6))


def test_asyncio_run_measures_elapsed_with_perf_counter():
    async def pause():
        await asyncio.sleep(0.05)
        return asyncio.get_running_loop().time()

    start = time.perf_counter()
    asyncio.run(pause())
    elapsed = time.perf_counter() - start
    assert elapsed >= 0.05 - 0.002
    assert elapsed < 20.0


def test_runner_keeps_one_loop_across_calls():
    with asyncio.Runner() as runner:
        runner.run(asyncio.sleep(0))
        first = runner.get_loop()
        state = {}

        async def remember():
            state["loop"] = asyncio.get_running_loop()
            state["task"] = asyncio.create_task(asyncio.sleep(3600))

        runner.run(remember())
        assert state["loop"] is first
        # A background task created in one run() survives into the next one.
        assert not state["task"].done()

        async def stop_it():
            state["task"].cancel()
            await asyncio.gather(state["task"], return_exceptions=True)
            return state["task"].cancelled()

        assert runner.run(stop_it()) is True


def test_asyncio_run_cancels_leftover_tasks():
    seen = []

    async def main_coro():
        async def forever():
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        asyncio.create_task(forever())
        await asyncio.sleep(0.01)
        return "done"

    assert asyncio.run(main_coro()) == "done"
    assert seen == ["cancelled"]
