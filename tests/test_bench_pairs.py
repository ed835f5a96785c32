"""bench/pairs.py: the helper every ratio `make bench` prints comes from (issue 22, item 5)."""

from __future__ import annotations

import sys
from typing import List

import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
import pairs  # noqa: E402


def test_pairs_alternate_which_side_runs_first() -> None:
    calls: List[str] = []

    def a() -> float:
        calls.append("a")
        return 1.0

    def b() -> float:
        calls.append("b")
        return 2.0

    r = pairs.interleaved(a, b, n=10)
    assert calls == ["a", "b", "b", "a"] * 5
    assert r["n"] == 10 and r["median"] == r["min"] == r["max"] == 2.0 and len(r["pairs"]) == 10


def test_the_ratio_is_the_median_of_the_pairs_with_its_range() -> None:
    # ten pairs whose ratios b/a are 1..10 (the order given is not sorted)
    ratios = [3, 9, 1, 10, 2, 8, 4, 7, 5, 6]
    r = pairs.summarize([(2.0, 2.0 * k) for k in ratios])
    assert r["median"] == 5.5 and r["min"] == 1 and r["max"] == 10
    assert r["ratios"] == ratios and r["pairs"][1] == [2.0, 18.0]
    assert pairs.text(r) == "5.50x (1.00-10.00x over 10 pairs)"
    flipped = pairs.summarize([(2.0 * k, 2.0) for k in ratios], what="a/b")
    assert flipped["median"] == 5.5


def test_an_odd_count_takes_the_middle_pair() -> None:
    r = pairs.summarize([(1.0, float(k)) for k in [5, 1, 3, 2, 4, 9, 8, 7, 6, 11, 10]])
    assert r["n"] == 11 and r["median"] == 6.0


@pytest.mark.parametrize("n", [0, 1, 9])
def test_fewer_than_ten_pairs_are_refused(n: int) -> None:
    with pytest.raises(ValueError, match="at least 10"):
        pairs.interleaved(lambda: 1.0, lambda: 1.0, n=n)
    with pytest.raises(ValueError, match="at least 10"):
        pairs.summarize([(1.0, 1.0)] * n)


def test_a_measurement_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        pairs.summarize([(1.0, 1.0)] * 9 + [(0.0, 1.0)])
