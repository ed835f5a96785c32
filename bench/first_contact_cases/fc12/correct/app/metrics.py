"""Process-wide counters (module state that the test suite resets between tests)."""
from collections import Counter

_COUNTERS: Counter = Counter()


def incr(name: str, n: int = 1) -> None:
    _COUNTERS[name] += n


def get(name: str) -> int:
    return _COUNTERS[name]


def snapshot() -> dict:
    return dict(_COUNTERS)


def reset() -> None:
    _COUNTERS.clear()
