"""Deadlines propagated through nested calls with a context variable.

``deadline_scope(budget)`` narrows the current deadline (never extends it); inside it,
``with_deadline(coro)`` runs the awaitable under ``asyncio.timeout_at`` of the effective deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from dataclasses import dataclass
from typing import Awaitable, Optional, TypeVar

from .errors import DeadlineExceeded

T = TypeVar("T")

_current: contextvars.ContextVar[Optional["Deadline"]] = contextvars.ContextVar(
    "pacer_deadline", default=None
)


@dataclass(frozen=True)
class Deadline:
    """An absolute point on the loop clock (``loop.time()``)."""

    when: float
    name: str = ""

    @classmethod
    def after(cls, budget: float, name: str = "") -> "Deadline":
        return cls(asyncio.get_running_loop().time() + budget, name)

    def remaining(self) -> float:
        return self.when - asyncio.get_running_loop().time()

    def expired(self) -> bool:
        return self.remaining() <= 0

    def min(self, other: Optional["Deadline"]) -> "Deadline":
        if other is None or self.when <= other.when:
            return self
        return other


def current_deadline() -> Optional[Deadline]:
    return _current.get()


def remaining(default: Optional[float] = None) -> Optional[float]:
    dl = _current.get()
    return default if dl is None else dl.remaining()


@contextlib.asynccontextmanager
async def deadline_scope(budget: float, name: str = ""):
    """Narrow the deadline for the block and enforce it (``asyncio.timeout_at``).

    Raises :class:`DeadlineExceeded` (a ``TimeoutError``) when this scope's own deadline fired;
    if an *outer* scope's deadline is the effective one, the outer scope reports it.
    """
    mine = Deadline.after(budget, name)
    outer = _current.get()
    effective = mine.min(outer)
    token = _current.set(effective)
    try:
        if effective is mine:
            try:
                async with asyncio.timeout_at(mine.when):
                    yield effective
            except TimeoutError as exc:
                if isinstance(exc, DeadlineExceeded):
                    raise
                raise DeadlineExceeded(f"deadline {name or budget!r} exceeded") from exc
        else:
            yield effective
    finally:
        _current.reset(token)


async def with_deadline(aw: Awaitable[T], budget: Optional[float] = None) -> T:
    """Await ``aw`` bounded by the current deadline (and ``budget`` if given)."""
    dl = _current.get()
    if budget is not None:
        dl = Deadline.after(budget).min(dl)
    if dl is None:
        return await aw
    if dl.expired():
        if asyncio.iscoroutine(aw):
            aw.close()
        raise DeadlineExceeded("deadline already expired")
    try:
        return await asyncio.wait_for(aw, timeout=dl.remaining())
    except TimeoutError as exc:
        if isinstance(exc, DeadlineExceeded):
            raise
        raise DeadlineExceeded("deadline exceeded") from exc
