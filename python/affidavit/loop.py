"""The controlled event loop: asyncio's selector loop with its hot path in C.

``ControlledLoop`` inherits the whole of ``asyncio.SelectorEventLoop`` (sockets, pipes,
subprocesses, signals, executors) and takes ``call_soon``, ``call_later``, ``call_at``, ``time``
and ``_run_once`` from ``_runtime.LoopCore``. ``install()`` puts it behind the event loop policy,
so ``asyncio.run``, pytest-asyncio and anyio's asyncio backend all create it.
"""

from __future__ import annotations

import asyncio
import selectors
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


class ControlledPolicy(asyncio.DefaultEventLoopPolicy):  # type: ignore[misc,valid-type]
    """The default policy, creating ControlledLoop instances."""

    _loop_factory = ControlledLoop


def install() -> None:
    """Make every event loop created from now on in this process a ControlledLoop, and let the
    recorder see asyncio's locks, events, semaphores and queues change hands."""
    _runtime.install_hooks()
    asyncio.set_event_loop_policy(ControlledPolicy())
