"""relay: small helpers for handing results from threads and callbacks to asyncio."""
from .driver import Driver, Store
from .errors import CallTimeout, Closed, DriverError, RelayError
from .handoff import Completion, callback_to_future, on_loop_thread, resolve_threadsafe
from .logbridge import AsyncQueueHandler, LogPump
from .pool import BlockingPool, to_thread_with_timeout
from .portal import BackgroundLoop, call_from_thread
from .supervisor import ThreadSupervisor, periodic
from .timing import Deadline, LagProbe, Stopwatch
from .watchdog import Watchdog, feed

__all__ = [
    "AsyncQueueHandler", "BackgroundLoop", "BlockingPool", "CallTimeout", "Closed",
    "Completion", "Deadline", "Driver", "DriverError", "LagProbe", "LogPump",
    "RelayError", "Stopwatch", "Store", "ThreadSupervisor", "Watchdog",
    "call_from_thread", "callback_to_future", "feed", "on_loop_thread", "periodic",
    "resolve_threadsafe", "to_thread_with_timeout",
]
