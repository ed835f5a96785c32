"""Retry with exponential backoff and (seeded) jitter, with a pluggable sleep."""

from __future__ import annotations

import asyncio
import functools
import logging
import random
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Optional, Sequence, Type

from . import stats
from .deadline import current_deadline
from .errors import DeadlineExceeded, RetryError

log = logging.getLogger("pacer.retry")

SleepFn = Callable[[float], Awaitable[None]]


@dataclass
class Backoff:
    """delay(i) = min(max_delay, base * factor**i), then jitter.

    ``jitter`` is ``"none"``, ``"full"`` (uniform in [0, d]) or ``"equal"`` (uniform in [d/2, d]).
    The random source is ``random.Random(seed)`` so schedules are reproducible.
    """

    base: float = 0.1
    factor: float = 2.0
    max_delay: float = 30.0
    jitter: str = "none"
    seed: Optional[int] = None
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.jitter not in ("none", "full", "equal"):
            raise ValueError(f"unknown jitter {self.jitter!r}")
        if self.base < 0 or self.factor < 1:
            raise ValueError("base must be >= 0 and factor >= 1")
        self._rng = random.Random(self.seed)

    def raw(self, attempt: int) -> float:
        return min(self.max_delay, self.base * self.factor ** attempt)

    def delay(self, attempt: int) -> float:
        d = self.raw(attempt)
        if self.jitter == "full":
            return self._rng.uniform(0.0, d)
        if self.jitter == "equal":
            return self._rng.uniform(d / 2, d)
        return d

    def schedule(self, attempts: int) -> list[float]:
        """The next ``attempts`` delays (consumes randomness like real use would)."""
        return [self.delay(i) for i in range(attempts)]


async def retry(
    fn: Callable[[], Awaitable],
    *,
    attempts: int = 3,
    backoff: Optional[Backoff] = None,
    retry_on: Sequence[Type[BaseException]] = (Exception,),
    sleep: SleepFn = asyncio.sleep,
    on_retry: Optional[Callable[[int, BaseException, float], None]] = None,
    respect_deadline: bool = True,
):
    """Call ``fn()`` until it succeeds or ``attempts`` calls have failed.

    Cancellation is never retried. With ``respect_deadline`` a backoff that would end after the
    current :func:`pacer.deadline_scope` deadline raises :class:`DeadlineExceeded` instead of sleeping.
    """
    if attempts < 1:
        raise ValueError("attempts must be >= 1")
    backoff = backoff or Backoff()
    retry_on = tuple(retry_on)
    for attempt in range(attempts):
        try:
            result = await fn()
        except asyncio.CancelledError:
            raise
        except retry_on as exc:
            stats.incr("retry.failures")
            if attempt + 1 >= attempts:
                raise RetryError(attempt + 1, exc) from exc
            delay = backoff.delay(attempt)
            if respect_deadline:
                dl = current_deadline()
                if dl is not None and dl.remaining() < delay:
                    raise DeadlineExceeded(
                        f"backoff of {delay:.3f}s exceeds remaining {dl.remaining():.3f}s"
                    ) from exc
            log.debug("attempt %d failed (%r); retrying in %.3fs", attempt + 1, exc, delay)
            if on_retry is not None:
                on_retry(attempt + 1, exc, delay)
            await sleep(delay)
        else:
            stats.incr("retry.successes")
            return result
    raise AssertionError("unreachable")  # pragma: no cover


def retrying(**options):
    """Decorator form of :func:`retry` for coroutine functions."""

    def decorate(func):
        @functools.wraps(func)
        async def wrapper(*args, **kwargs):
            return await retry(lambda: func(*args, **kwargs), **options)

        return wrapper

    return decorate
