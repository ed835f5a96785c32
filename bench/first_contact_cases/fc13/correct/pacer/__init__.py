"""pacer: time, pacing and thread-bridge helpers for asyncio applications."""

from .clock import Clock, LoopClock, ManualClock, MonotonicClock, utcnow
from .errors import (
    BridgeClosed,
    DeadlineExceeded,
    PacerError,
    RateLimitExceeded,
    RetryError,
)
from .ratelimit import LeakyBucket, SlidingWindow, TokenBucket
from .retry import Backoff, retry, retrying
from .debounce import Debouncer, Throttler
from .periodic import PeriodicTask
from .watchdog import Watchdog
from .deadline import Deadline, current_deadline, deadline_scope, remaining, with_deadline
from .ttl import TTLRecord, TTLStore
from .bridge import (
    LoopThread,
    QueueBridge,
    SyncFacade,
    ThreadNotifier,
    run_blocking,
    wait_thread_event,
)
from . import stats

__all__ = [
    "Backoff", "BridgeClosed", "Clock", "Deadline", "DeadlineExceeded", "Debouncer",
    "LeakyBucket", "LoopClock", "LoopThread", "ManualClock", "MonotonicClock", "PacerError",
    "PeriodicTask", "QueueBridge", "RateLimitExceeded", "RetryError", "SlidingWindow",
    "SyncFacade", "TTLRecord", "TTLStore", "ThreadNotifier", "Throttler", "TokenBucket",
    "Watchdog", "current_deadline", "deadline_scope", "remaining", "retry", "retrying",
    "run_blocking", "stats", "utcnow", "wait_thread_event", "with_deadline",
]
__version__ = "0.4.1"
