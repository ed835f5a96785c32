"""Exception types shared by the relay package."""


class RelayError(Exception):
    """Base class for relay errors."""


class Closed(RelayError):
    """The object was closed and refuses new work."""


class DriverError(RelayError):
    """The driver thread reported a failure it could not attribute to a call."""


class CallTimeout(RelayError, TimeoutError):
    """A call into a thread timed out.

    The thread behind the call cannot be interrupted, so ``started`` tells the
    caller whether the work had begun (and may still be running).
    """

    def __init__(self, message: str, *, started: bool) -> None:
        super().__init__(message)
        self.started = started
