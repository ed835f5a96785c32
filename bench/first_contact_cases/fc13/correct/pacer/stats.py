"""Process-wide counters (reset by the test-suite between tests)."""

import threading
from collections import Counter

_lock = threading.Lock()
_counts: Counter = Counter()


def incr(name: str, n: int = 1) -> None:
    with _lock:
        _counts[name] += n


def get(name: str) -> int:
    with _lock:
        return _counts[name]


def snapshot() -> dict:
    with _lock:
        return dict(_counts)


def reset() -> None:
    with _lock:
        _counts.clear()
