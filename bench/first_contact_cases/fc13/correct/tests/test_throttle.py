"""Throttler tests (leading + trailing edge)."""

import asyncio

import pytest

from pacer import Throttler

EPS = 0.010
pytestmark = pytest.mark.asyncio


async def test_leading_call_fires_immediately():
    calls = []
    thr = Throttler(calls.append, interval=0.05)
    thr.trigger(1)
    assert len(thr.fired_at) == 1  # launched synchronously
    await asyncio.wait_for(thr.wait_idle(), 5)
    assert calls == [1]


async def test_burst_gives_leading_and_trailing_call():
    calls = []
    thr = Throttler(calls.append, interval=0.05)
    for i in range(1, 6):
        thr.trigger(i)
    await asyncio.wait_for(thr.wait_idle(), 5)
    assert calls == [1, 5]
    assert thr.dropped == 3
    assert thr.fired_at[1] - thr.fired_at[0] >= 0.05 - EPS


async def test_without_trailing_everything_else_is_dropped():
    calls = []
    thr = Throttler(calls.append, interval=0.05, trailing=False)
    for i in range(1, 6):
        thr.trigger(i)
    await asyncio.wait_for(thr.wait_idle(), 5)
    assert calls == [1]
    assert thr.dropped == 4


async def test_stream_is_spaced_and_last_value_wins():
    calls = []
    thr = Throttler(calls.append, interval=0.03)
    for i in range(12):
        thr.trigger(i)
        await asyncio.sleep(0.01)
    await asyncio.wait_for(thr.wait_idle(), 5)
    assert calls[0] == 0
    assert calls[-1] == 11
    assert calls == sorted(calls)
    for a, b in zip(thr.fired_at, thr.fired_at[1:]):
        assert b - a >= 0.03 - EPS

