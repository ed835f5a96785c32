"""Exception types shared by the :mod:`bridge` modules."""

from __future__ import annotations


class BridgeError(Exception):
    """Base class for every error raised on purpose by :mod:`bridge`."""


class BridgeClosed(BridgeError):
    """The object was closed; no more work is accepted (or available)."""


class QueueEmpty(BridgeError):
    """A non-blocking or timed ``get`` found nothing to return."""


class QueueFull(BridgeError):
    """A non-blocking or timed ``put`` found no free slot."""


class DriverError(BridgeError):
    """The driver thread failed to start or died unexpectedly."""


class BlockingTimeout(BridgeError, TimeoutError):
    """A blocking call offloaded to a thread did not finish in time.

    The thread itself cannot be interrupted; ``still_running`` tells whether
    the job was still executing when the timeout fired.
    """

    def __init__(self, message: str, *, still_running: bool) -> None:
        super().__init__(message)
        self.still_running = still_running
