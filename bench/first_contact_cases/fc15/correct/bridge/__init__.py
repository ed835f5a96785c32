"""bridge: small helpers for code that lives half in threads, half in asyncio.

The package collects the pieces a typical service ends up writing when it has
to talk to blocking libraries from an event loop:

* :class:`~bridge.queue.BridgeQueue` - a queue with a thread side and a loop side;
* :class:`~bridge.driver.Driver` - a dedicated thread owning a sqlite3 connection;
* :class:`~bridge.executor.WorkerPool` - bounded offloading with timeouts;
* :mod:`~bridge.cpu` - hashing / compression / parsing helpers for big payloads;
* :class:`~bridge.ratelimit.TokenBucket` - a limiter shared by threads and tasks;
* :class:`~bridge.heartbeat.Heartbeat` and :class:`~bridge.heartbeat.LagMonitor`;
* :class:`~bridge.portal.LoopThread` - an event loop running in a helper thread;
* :class:`~bridge.events.ThreadSafeEvent` - an event settable from any thread.
"""

from .driver import Driver
from .errors import (
    BlockingTimeout,
    BridgeClosed,
    BridgeError,
    DriverError,
    QueueEmpty,
    QueueFull,
)
from .events import ThreadSafeEvent
from .executor import WorkerPool, run_blocking
from .heartbeat import Heartbeat, LagMonitor
from .portal import LoopThread, call_in_loop
from .queue import BridgeQueue
from .ratelimit import TokenBucket

__all__ = [
    "BlockingTimeout",
    "BridgeClosed",
    "BridgeError",
    "BridgeQueue",
    "Driver",
    "DriverError",
    "Heartbeat",
    "LagMonitor",
    "LoopThread",
    "QueueEmpty",
    "QueueFull",
    "ThreadSafeEvent",
    "TokenBucket",
    "WorkerPool",
    "call_in_loop",
    "run_blocking",
]
