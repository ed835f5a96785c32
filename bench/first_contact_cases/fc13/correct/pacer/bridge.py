"""Bridges between threads and asyncio.

* :class:`LoopThread` - a private event loop running in a background thread.
* :class:`SyncFacade` - blocking calls into that loop (``run_coroutine_threadsafe`` +
  ``Future.result(timeout=...)``) that never lose a result which completed as the timeout hit.
* :class:`QueueBridge` - a thread producer feeding an async consumer, with back-pressure.
* :class:`ThreadNotifier` - worker threads completing loop futures via ``call_soon_threadsafe``.
* :func:`run_blocking`, :func:`wait_thread_event` - blocking work and ``threading.Event`` polling.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import itertools
import threading
from typing import Any, Awaitable, Callable, Optional

from . import stats
from .errors import BridgeClosed

_ids = itertools.count(1)


class LoopThread:
    """Runs a new event loop forever in a daemon thread named ``pacer-loop-N``."""

    def __init__(self, name: Optional[str] = None) -> None:
        self.name = name or f"pacer-loop-{next(_ids)}"
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._ready = threading.Event()
        self._stopped = False

    def start(self, timeout: float = 10.0) -> "LoopThread":
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("loop thread did not start")
        return self

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self.loop = loop
        asyncio.set_event_loop(loop)
        loop.call_soon(self._ready.set)
        try:
            loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for t in pending:
                    t.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                asyncio.set_event_loop(None)
                loop.close()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stopped

    def submit(self, coro: Awaitable) -> concurrent.futures.Future:
        if not self.alive:
            if asyncio.iscoroutine(coro):
                coro.close()
            raise BridgeClosed("loop thread is not running")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        if not self.alive:
            raise BridgeClosed("loop thread is not running")
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread is None or self._stopped:
            return
        self._stopped = True
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"{self.name} did not stop within {timeout}s")


class SyncFacade:
    """Blocking API over coroutines run on a private :class:`LoopThread`.

    ``call(fn, *args, timeout=t)`` raises ``TimeoutError`` after ``t`` seconds and cancels the
    coroutine; if the coroutine had already finished when the timeout hit, its result is returned
    instead (the outcome is tracked inside the loop, not inferred from the concurrent future).
    """

    def __init__(self, cancel_grace: float = 5.0) -> None:
        self._lt = LoopThread()
        self.cancel_grace = cancel_grace
        self.calls = 0

    def start(self) -> "SyncFacade":
        self._lt.start()
        return self

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._lt.loop

    @property
    def thread_name(self) -> str:
        return self._lt.name

    def __enter__(self) -> "SyncFacade":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._lt.stop()

    def call(self, fn: Callable[..., Awaitable], *args: Any, timeout: Optional[float] = None) -> Any:
        guard = threading.Lock()
        state = {"started": False, "abandoned": False}
        outcome: dict = {}
        finished = threading.Event()

        async def runner():
            with guard:
                if state["abandoned"]:
                    return None
                state["started"] = True
            try:
                value = await fn(*args)
            except BaseException as exc:
                outcome["exc"] = exc
                raise
            else:
                outcome["value"] = value
                return value
            finally:
                finished.set()

        fut = self._lt.submit(runner())
        self.calls += 1
        stats.incr("facade.calls")
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            pass
        with guard:
            state["abandoned"] = True
            started = state["started"]
        fut.cancel()
        if started and finished.wait(self.cancel_grace) and "value" in outcome:
            stats.incr("facade.late_results")
            return outcome["value"]
        raise TimeoutError(f"call did not finish within {timeout}s")


class QueueBridge:
    """Items put by threads come out of ``await get()`` / ``async for`` in the loop, in order.

    ``maxsize`` bounds the items in flight: ``put`` blocks the producing thread until the consumer
    has taken an item (``timeout`` raises ``TimeoutError``).
    """

    _CLOSE = object()

    class _Failure:
        def __init__(self, exc: BaseException) -> None:
            self.exc = exc

    def __init__(self, loop: asyncio.AbstractEventLoop, maxsize: int = 0) -> None:
        self._loop = loop
        self._q: asyncio.Queue = asyncio.Queue()
        self._slots = threading.BoundedSemaphore(maxsize) if maxsize > 0 else None
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self.put_count = 0

    @classmethod
    def for_running_loop(cls, maxsize: int = 0) -> "QueueBridge":
        return cls(asyncio.get_running_loop(), maxsize)

    # -- thread side --------------------------------------------------------------------------
    def put(self, item: Any, timeout: Optional[float] = None) -> None:
        if self._closed.is_set():
            raise BridgeClosed("bridge closed")
        if self._slots is not None and not self._slots.acquire(timeout=-1 if timeout is None else timeout):
            raise TimeoutError("consumer did not keep up")
        self.put_count += 1
        self._loop.call_soon_threadsafe(self._q.put_nowait, item)

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._loop.call_soon_threadsafe(self._q.put_nowait, self._CLOSE)

    def fail(self, exc: BaseException) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._loop.call_soon_threadsafe(self._q.put_nowait, self._Failure(exc))

    def start_producer(self, target: Callable[["QueueBridge"], None]) -> threading.Thread:
        """Run ``target(bridge)`` in a thread; the bridge is closed (or failed) when it returns."""

        def main() -> None:
            try:
                target(self)
            except BaseException as exc:
                self.fail(exc)
            else:
                self.close()

        t = threading.Thread(target=main, name=f"pacer-producer-{next(_ids)}", daemon=True)
        self._threads.append(t)
        t.start()
        return t

    def join(self, timeout: float = 10.0) -> None:
        for t in self._threads:
            t.join(timeout)
            if t.is_alive():
                raise RuntimeError(f"{t.name} still running")

    # -- loop side ----------------------------------------------------------------------------
    async def get(self) -> Any:
        item = await self._q.get()
        if item is self._CLOSE:
            self._q.put_nowait(item)  # keep later gets ending too
            raise BridgeClosed("bridge closed")
        if isinstance(item, self._Failure):
            self._q.put_nowait(item)
            raise item.exc
        if self._slots is not None:
            self._slots.release()
        return item

    def __aiter__(self) -> "QueueBridge":
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.get()
        except BridgeClosed:
            raise StopAsyncIteration from None


class ThreadNotifier:
    """Loop futures completed from worker threads via ``call_soon_threadsafe``.

    A future that was cancelled (e.g. its waiter timed out) is left alone: late notifications
    are counted in ``late`` instead of raising ``InvalidStateError`` inside the loop.
    """

    def __init__(self, loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
        self._loop = loop or asyncio.get_running_loop()
        self.late = 0
        self.delivered = 0

    def future(self) -> asyncio.Future:
        return self._loop.create_future()

    def _set(self, fut: asyncio.Future, value: Any, exc: Optional[BaseException]) -> None:
        if fut.done():
            self.late += 1
            return
        self.delivered += 1
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(value)

    def notify(self, fut: asyncio.Future, value: Any = None) -> None:
        """Thread-safe: complete ``fut`` with ``value``."""
        self._loop.call_soon_threadsafe(self._set, fut, value, None)

    def notify_error(self, fut: asyncio.Future, exc: BaseException) -> None:
        self._loop.call_soon_threadsafe(self._set, fut, None, exc)


async def run_blocking(fn: Callable[..., Any], *args: Any,
                       executor: Optional[concurrent.futures.Executor] = None, **kwargs: Any) -> Any:
    """Run blocking ``fn`` in ``executor`` (default: the loop's) and await its result."""
    stats.incr("bridge.blocking")
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(executor, functools.partial(fn, *args, **kwargs))


async def wait_thread_event(event: threading.Event, timeout: Optional[float] = None,
                            poll: float = 0.005) -> bool:
    """Poll a ``threading.Event`` with short ``asyncio.sleep`` s; False once ``timeout`` passed."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while not event.is_set():
        if deadline is not None:
            left = deadline - loop.time()
            if left <= 0:
                return event.is_set()
            await asyncio.sleep(min(poll, left))
        else:
            await asyncio.sleep(poll)
    return True
