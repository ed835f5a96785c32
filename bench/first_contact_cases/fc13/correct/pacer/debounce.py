"""Debouncer (run once after a quiet period) and Throttler (at most once per interval).

Both wrap a sync or async callable. Calls are triggered synchronously (``trigger``) from loop
code; runs of the wrapped callable are serialized and happen in fire order.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Callable, Optional

from . import stats

log = logging.getLogger("pacer.debounce")


class _Runner:
    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        self._fn = fn
        self._name = name
        self._run_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task] = set()
        self.fired_at: list[float] = []
        self.calls: list[tuple] = []
        self.errors: list[BaseException] = []

    def _launch(self, args: tuple, kwargs: dict, now: Optional[float] = None) -> asyncio.Task:
        loop = asyncio.get_running_loop()
        self.fired_at.append(loop.time() if now is None else now)
        stats.incr(f"{self._name}.fired")
        task = loop.create_task(self._run(args, kwargs))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run(self, args: tuple, kwargs: dict) -> None:
        async with self._run_lock:
            self.calls.append(args)
            try:
                res = self._fn(*args, **kwargs)
                if inspect.isawaitable(res):
                    await res
            except Exception as exc:  # reported, never raised into the loop
                log.warning("%s target failed: %r", self._name, exc)
                self.errors.append(exc)

    async def wait_idle(self) -> None:
        while self._tasks or self._pending():
            if self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)
            else:
                await asyncio.sleep(0.001)

    def _pending(self) -> bool:  # pragma: no cover - overridden
        return False

    async def aclose(self) -> None:
        self.cancel()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def cancel(self) -> None:  # pragma: no cover - overridden
        pass


class Debouncer(_Runner):
    """Call ``fn`` with the *last* arguments once ``wait`` seconds passed without a trigger.

    ``max_wait`` bounds how long a continuous stream of triggers may postpone the call.
    """

    def __init__(self, fn: Callable[..., Any], wait: float, *, max_wait: Optional[float] = None) -> None:
        super().__init__(fn, "debounce")
        self.wait = wait
        self.max_wait = max_wait
        self._handle: Optional[asyncio.TimerHandle] = None
        self._args: Optional[tuple] = None
        self._kwargs: dict = {}
        self._first_pending: Optional[float] = None
        self.triggered = 0

    def _pending(self) -> bool:
        return self._handle is not None

    def trigger(self, *args: Any, **kwargs: Any) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        self.triggered += 1
        self._args, self._kwargs = args, kwargs
        if self._first_pending is None:
            self._first_pending = now
        if self._handle is not None:
            self._handle.cancel()
        when = now + self.wait
        if self.max_wait is not None:
            when = min(when, self._first_pending + self.max_wait)
        self._handle = loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        args, kwargs = self._args or (), self._kwargs
        self._args, self._kwargs, self._first_pending = None, {}, None
        self._launch(args, kwargs)

    async def flush(self) -> None:
        """Fire a pending call now and wait for it to finish."""
        if self._handle is not None:
            self._handle.cancel()
            self._fire()
        await self.wait_idle()

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._args, self._kwargs, self._first_pending = None, {}, None


class Throttler(_Runner):
    """Leading + trailing throttle: fire at once, then at most once per ``interval``
    with the latest arguments seen meanwhile."""

    def __init__(self, fn: Callable[..., Any], interval: float, *, trailing: bool = True) -> None:
        super().__init__(fn, "throttle")
        self.interval = interval
        self.trailing = trailing
        self._last_fire: Optional[float] = None
        self._handle: Optional[asyncio.TimerHandle] = None
        self._trailing_args: Optional[tuple] = None
        self._trailing_kwargs: dict = {}
        self.dropped = 0

    def _pending(self) -> bool:
        return self._handle is not None

    def trigger(self, *args: Any, **kwargs: Any) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._handle is None and (self._last_fire is None or now - self._last_fire >= self.interval):
            self._last_fire = now
            self._launch(args, kwargs, now)
            return
        if not self.trailing:
            self.dropped += 1
            return
        if self._trailing_args is not None:
            self.dropped += 1
        self._trailing_args, self._trailing_kwargs = args, kwargs
        if self._handle is None:
            self._handle = loop.call_at(self._last_fire + self.interval, self._fire_trailing)

    def _fire_trailing(self) -> None:
        loop = asyncio.get_running_loop()
        if loop.time() - self._last_fire < self.interval:  # timer fired a hair early
            self._handle = loop.call_at(self._last_fire + self.interval, self._fire_trailing)
            return
        self._handle = None
        args, kwargs = self._trailing_args, self._trailing_kwargs
        self._trailing_args, self._trailing_kwargs = None, {}
        if args is not None:
            self._last_fire = now = loop.time()
            self._launch(args, kwargs, now)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._trailing_args, self._trailing_kwargs = None, {}
