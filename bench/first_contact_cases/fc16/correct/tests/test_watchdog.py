import asyncio
import threading
import time

import pytest

from relay import Watchdog, feed
from _helpers import EVENTUALLY, ManualClock, wait_until


@pytest.mark.asyncio
async def test_manual_clock_trip_is_reported_on_the_loop():
    clock = ManualClock()
    seen = []
    dog = Watchdog(1.0, lambda gap: seen.append((gap, threading.get_ident())),
                   check_interval=0.005, clock=clock)
    dog.start()
    try:
        await wait_until(lambda: dog.checks >= 3)
        assert seen == []
        clock.advance(2.5)
        await wait_until(lambda: seen)
        gap, ident = seen[0]
        assert gap == pytest.approx(2.5)
        assert ident == threading.get_ident()
    finally:
        await dog.astop()


@pytest.mark.asyncio
async def test_one_report_per_stall():
    clock = ManualClock()
    seen = []
    dog = Watchdog(1.0, seen.append, check_interval=0.005, clock=clock)
    dog.start()
    try:
        clock.advance(3.0)
        await wait_until(lambda: seen)
        checks = dog.checks
        await wait_until(lambda: dog.checks >= checks + 5)
        assert seen == [pytest.approx(3.0)]
        assert len(dog.trips) == 1
    finally:
        await dog.astop()


@pytest.mark.asyncio
async def test_blocked_loop_trips_real_clock_watchdog():
    seen = []
    dog = Watchdog(0.05, seen.append, check_interval=0.01)
    dog.start()
    try:
        # block the loop thread until the watchdog thread has noticed
        deadline = time.monotonic() + EVENTUALLY
        while not dog.trips and time.monotonic() < deadline:
            time.sleep(0.005)
        assert dog.trips and dog.trips[0] > 0.05
        assert seen == []  # the report waits for the loop
        await wait_until(lambda: seen)
        assert seen[0] == dog.trips[0]
    finally:
        await dog.astop()


@pytest.mark.asyncio
async def test_fed_watchdog_does_not_trip():
    seen = []
    dog = Watchdog(10.0, seen.append, check_interval=0.01)  # generous timeout
    dog.start()
    stop = asyncio.Event()
    feeder = asyncio.ensure_future(feed(dog, 0.005, stop))
    try:
        await wait_until(lambda: dog.checks >= 10)
    finally:
        stop.set()
        pets = await feeder
        await dog.astop()
    assert pets >= 1
    assert seen == [] and dog.trips == []


@pytest.mark.asyncio
async def test_start_twice_and_stop_joins():
    dog = Watchdog(1.0, lambda gap: None, check_interval=0.01)
    dog.start()
    with pytest.raises(RuntimeError):
        dog.start()
    await dog.astop()
    assert not dog._thread.is_alive()
    dog.stop()  # second stop is harmless


def test_invalid_timeout():
    with pytest.raises(ValueError):
        Watchdog(0, lambda gap: None)
