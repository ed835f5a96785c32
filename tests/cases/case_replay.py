"""Input for tests/test_replay.py: regression tests written with @affidavit.replay, on the window
example's code (the reader's first step delayed by 500 us makes it read before the write)."""

import asyncio

import pytest

import affidavit

STATE: dict = {}
FAILS = "afd1:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaiaaaaaqaaaabzgkylemvzcgmaaaaaaaifba4aaaaaaaawwoynj"  # 500 us
PASSES = "afd1:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaiaaaaaqaaaabzgkylemvzcgmaaaaaabaa2ayaaaaaaabpeqaxk"  # 400 us
NOBODY = "afd1:aeaaaaaaaaaaaaaaaaaaaaaaaaaaaaiaaaaaqaaaabxg6ytpmr4sgmadaaaaaifba4aaaaaaabymncv7"  # nobody#0


async def writer(ready: "asyncio.Event | None") -> None:
    await asyncio.sleep(0)
    await asyncio.sleep(0.001)
    STATE["ready"] = True
    if ready is not None:
        ready.set()


async def reader(ready: "asyncio.Event | None") -> None:
    await asyncio.sleep(0.0015)
    if ready is not None:  # the fix: wait for the write instead of assuming 1.5 ms is enough
        await ready.wait()
    assert STATE.get("ready"), "read before the write"


async def buggy() -> None:
    STATE.clear()
    await asyncio.gather(writer(None), reader(None))


async def fixed() -> None:
    STATE.clear()
    ready = asyncio.Event()
    await asyncio.gather(writer(ready), reader(ready))


@affidavit.replay(FAILS)
async def test_buggy_under_the_failing_token() -> None:
    await buggy()


@affidavit.replay(FAILS)
async def test_fixed_under_the_failing_token() -> None:
    await fixed()


@affidavit.replay(PASSES)
async def test_buggy_just_under_the_window() -> None:
    await buggy()


@affidavit.replay(NOBODY)
async def test_vacuous_token() -> None:
    await fixed()


@pytest.fixture
def answer() -> int:
    return 42


@affidavit.replay(PASSES)
async def test_fixtures_still_arrive(answer: int) -> None:
    assert answer == 42
    await buggy()
