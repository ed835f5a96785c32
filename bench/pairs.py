"""Ratios that survive a noisy machine: interleaved A/B pairs, quoted as median and range.

One invocation of A against one of B says little on a shared machine: measured on an idle machine
of the same kind, the ring benchmark's stock/controlled ratio ranged 0.88x-3.23x over ten pairs
while one invocation said 1.05x. So every ratio `make bench` prints comes from `interleaved`: A and
B measured alternately, the order flipped every pair (A B, B A, A B, ...) so that neither side is
always the one that runs warm, at least MIN_PAIRS pairs, each pair's ratio kept. What is quoted is
the median of the pair ratios with their range; the pairs themselves go into the results file.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence

MIN_PAIRS = 10


def median(xs: Sequence[float]) -> float:
    """The median (the mean of the two middle values for an even count)."""
    if not xs:
        raise ValueError("the median of nothing")
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def summarize(pairs: Sequence[Sequence[float]], what: str = "b/a") -> Dict[str, Any]:
    """The ratio of each (a, b) pair (what: "b/a" or "a/b"), their median and range, and the pairs."""
    if len(pairs) < MIN_PAIRS:
        raise ValueError(f"{len(pairs)} pairs: a ratio needs at least {MIN_PAIRS}")
    if what not in ("b/a", "a/b"):
        raise ValueError(f"what must be 'b/a' or 'a/b', not {what!r}")
    ratios: List[float] = []
    for a, b in pairs:
        if a <= 0 or b <= 0:
            raise ValueError(f"a measurement must be positive: {(a, b)}")
        ratios.append(b / a if what == "b/a" else a / b)
    return {"ratio": what, "median": median(ratios), "min": min(ratios), "max": max(ratios), "n": len(ratios),
            "ratios": ratios, "pairs": [[a, b] for a, b in pairs]}


def interleaved(a: Callable[[], float], b: Callable[[], float], n: int = MIN_PAIRS,
                what: str = "b/a") -> Dict[str, Any]:
    """Measures a() and b() n times each, alternately, the first of each pair alternating (a b,
    b a, a b, ...); each call returns one positive measurement (a time, a time per unit)."""
    if n < MIN_PAIRS:
        raise ValueError(f"{n} pairs: a ratio needs at least {MIN_PAIRS}")
    pairs = []
    for i in range(n):
        if i % 2 == 0:
            x = a()
            y = b()
        else:
            y = b()
            x = a()
        pairs.append((x, y))
    return summarize(pairs, what)


def text(r: Dict[str, Any], fmt: str = ".2f") -> str:
    """'1.54x (0.88-3.23x over 10 pairs)'."""
    return f"{r['median']:{fmt}}x ({r['min']:{fmt}}-{r['max']:{fmt}}x over {r['n']} pairs)"
