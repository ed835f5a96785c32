"""The two-window example (examples/test_two_windows.py), by replay of explicit schedules.

It fails exactly when read#0's first step costs d_A in (500, 600] us and read#1's first step costs
d_B in (300, 400] us (measured to the nanosecond: d_A in (500000, 600000] ns and d_B in
[300000, 400000) ns, the float clock's rounding deciding the tie of two equal deadlines). Each
point below is 1 us inside or outside an edge, so the assertions hold to the loop's clock
resolution; every replay is deterministic (one schedule, identical traces).
"""

from __future__ import annotations

from typing import List, Tuple

import pytest

from helpers import engine_json

from affidavit import _runtime

NODE = "examples/test_two_windows.py::test_client_gets_a_consistent_record"
A_IN, B_IN = 550_000, 350_000


def replay(delays: List[Tuple[str, int, int]], expect: int, n: int = 2) -> None:
    token = _runtime.token_encode("zero", 0, delays=delays)
    _, d = engine_json("replay", token, NODE, "-n", str(n), expect=expect)
    assert d["runs"] == n and d["identical_traces"] is True, d
    assert d["delays_never_ran"] == [], d
    assert d["failed"] == (n if expect == 1 else 0), d


@pytest.mark.parametrize("a,b", [(A_IN, B_IN), (501_000, 301_000), (599_000, 399_000)])
def test_both_delays_inside_their_windows_fail(a: int, b: int) -> None:
    replay([("read#0", 0, a), ("read#1", 0, b)], expect=1)


@pytest.mark.parametrize("a,b", [(499_000, B_IN), (601_000, B_IN), (A_IN, 299_000), (A_IN, 401_000)],
                         ids=["A-below", "A-above", "B-below", "B-above"])
def test_either_delay_just_outside_its_window_passes(a: int, b: int) -> None:
    replay([("read#0", 0, a), ("read#1", 0, b)], expect=0)


@pytest.mark.parametrize("delays", [[("read#0", 0, A_IN)], [("read#1", 0, B_IN)], []], ids=["A-alone", "B-alone", "zero"])
def test_one_delay_alone_passes(delays: List[Tuple[str, int, int]]) -> None:
    replay(delays, expect=0)
