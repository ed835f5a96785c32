"""Exception hierarchy."""


class PacerError(Exception):
    """Base class of every pacer error."""


class RateLimitExceeded(PacerError):
    """A non-blocking acquire found no capacity, or a wait would exceed max_wait."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limit exceeded, retry after {retry_after:.3f}s")
        self.retry_after = retry_after


class RetryError(PacerError):
    """All attempts failed; ``last`` is the final exception, ``attempts`` how many ran."""

    def __init__(self, attempts: int, last: BaseException) -> None:
        super().__init__(f"gave up after {attempts} attempts: {last!r}")
        self.attempts = attempts
        self.last = last


class DeadlineExceeded(PacerError, TimeoutError):
    """The propagated deadline expired before the operation finished."""


class BridgeClosed(PacerError):
    """The bridge / facade has been closed."""
