"""The controlled event loop: asyncio's selector loop with its hot path in C.

``ControlledLoop`` inherits the whole of ``asyncio.SelectorEventLoop`` (sockets, pipes,
subprocesses, signals, executors) and takes ``call_soon``, ``call_later``, ``call_at``, ``time``
and ``_run_once`` from ``_runtime.LoopCore``. ``install()`` puts it behind the event loop policy,
so ``asyncio.run``, pytest-asyncio and anyio's asyncio backend all create it.
"""

from __future__ import annotations

import asyncio
import collections
import selectors
import threading
from typing import Optional

from . import _runtime


class ControlledLoop(_runtime.LoopCore, asyncio.SelectorEventLoop):  # type: ignore[misc]
    """A FIFO-faithful event loop whose clock the run's schedule controls."""

    def __init__(self, selector: Optional[selectors.BaseSelector] = None) -> None:
        asyncio.SelectorEventLoop.__init__(self, selector)
        self._core_init()

    def close(self) -> None:
        super().close()
        self._core_clear()

    # asyncio's _ready (a deque) and _scheduled (a heapq list): the C core keeps the queues, so these
    # are copies of them, read when asked for (what is ready, in the order it will run; the timers,
    # the earliest first). asyncio's own code only assigns and clears them (__init__, close), which
    # the core does for itself; a change made to a copy is not seen by the loop.
    @property
    def _ready(self) -> "collections.deque[asyncio.Handle]":
        return collections.deque(self._core_queues()[0])

    @_ready.setter
    def _ready(self, value: object) -> None:
        pass

    @property
    def _scheduled(self) -> "list[asyncio.TimerHandle]":
        return self._core_queues()[1]

    @_scheduled.setter
    def _scheduled(self, value: object) -> None:
        pass

    def set_debug(self, enabled: bool) -> None:
        # asyncio's debug mode: the C core checks, records and warns as BaseEventLoop does
        super().set_debug(enabled)
        self._core_set_debug(enabled)


class ControlledPolicy(asyncio.DefaultEventLoopPolicy):  # type: ignore[misc,valid-type]
    """The default policy, creating ControlledLoop instances on the run's thread (the one that
    installed it) and asyncio's own loop on any other: a loop a library runs in a thread of its own
    (a portal, a background loop) runs in real time beside the run, as that thread does."""

    _loop_factory = ControlledLoop

    def __init__(self) -> None:
        super().__init__()
        self._home = threading.get_ident()

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        if threading.get_ident() != self._home:
            return asyncio.SelectorEventLoop()
        return ControlledLoop()


def foreign_policy() -> str:
    """The class of the event loop policy the project set (a conftest's
    ``asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())`` at import), or "" when it is
    asyncio's own default (or ours): a policy the project chose makes the project's loops, which
    affidavit names and never replaces."""
    policy = getattr(asyncio.events, "_event_loop_policy", None)
    if policy is None or type(policy) in (asyncio.DefaultEventLoopPolicy, ControlledPolicy):
        return ""
    if getattr(policy, "_loop_factory", None) is _adopted_factory:
        return ""
    return f"{type(policy).__module__}.{type(policy).__qualname__}"


_home: Optional[int] = None  # the thread that adopted a policy: the runs' thread


def _adopted_factory() -> asyncio.AbstractEventLoop:
    """The loop factory of a policy adopt() adopted: ControlledPolicy's choice of loop."""
    return ControlledLoop() if threading.get_ident() == _home else asyncio.SelectorEventLoop()


def adopt(policy: object) -> bool:
    """A policy of the project's that makes its loops through asyncio's own loop factory -- a
    subclass of the default policy that keeps its ``_loop_factory``, whatever else it changes (a
    ``new_event_loop`` that tags or counts what ``super()`` made, a ``set_event_loop`` that closes
    the loop it replaces) -- makes the controlled loop on the run's thread from now on, as the
    default policy does under affidavit; the policy and its overrides stay the project's. A
    ``new_event_loop`` that makes another loop itself (uvloop's, a subclass) still does: the run
    then names that loop and is not explored. Returns whether it was adopted."""
    global _home
    stock = asyncio.DefaultEventLoopPolicy
    if not isinstance(policy, stock) or isinstance(policy, ControlledPolicy):
        return False
    factory = getattr(policy, "_loop_factory", None)
    if factory is not _adopted_factory:
        if factory is not stock._loop_factory:
            return False
        _home = threading.get_ident()
        policy._loop_factory = _adopted_factory  # type: ignore[attr-defined]
    return True


def adopt_policy() -> str:
    """Adopts the policy the project set at import, if it can (adopt); returns foreign_policy()
    after: "" when adopted or asyncio's own, else the policy, which is named and never replaced."""
    if foreign_policy():
        adopt(getattr(asyncio.events, "_event_loop_policy", None))
    return foreign_policy()


def install() -> None:
    """Make every event loop created from now on in this process a ControlledLoop, and let the
    recorder see asyncio's locks, events, semaphores and queues change hands. A policy the project
    set (foreign_policy) stays: its loops run, and each run says so."""
    _runtime.install_hooks()
    policy = getattr(asyncio.events, "_event_loop_policy", None)
    if not foreign_policy() and getattr(policy, "_loop_factory", None) is not _adopted_factory:
        asyncio.set_event_loop_policy(ControlledPolicy())
