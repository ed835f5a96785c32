"""Event loops in helper threads, and calls across the boundary.

:class:`LoopThread` starts a private event loop in a daemon thread - the
pattern sync libraries use to offer an async backend, or async libraries use
to give sync callers a blocking API.  Any thread can run a coroutine on it
(:meth:`LoopThread.run`, built on ``run_coroutine_threadsafe``) or a plain
callable (:meth:`LoopThread.call`).  :meth:`LoopThread.stop` cancels what is
still running, stops and closes the loop *on its own thread*, then joins it;
every hand-off happens under a lock so that a stop racing with a submit never
schedules onto a closed loop.

:func:`call_in_loop` is the reverse direction: a worker thread runs a
function on the main loop and waits for its result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Callable, Coroutine, Optional, TypeVar

from .errors import BridgeClosed

R = TypeVar("R")


class LoopThread:
    def __init__(self, name: str = "bridge-loop") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._ready = threading.Event()
        self._accepting = False

    def start(self) -> "LoopThread":
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("already started")
            self._thread = threading.Thread(target=self._main, name=self.name,
                                            daemon=True)
            self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("loop thread did not start")
        return self

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        with self._lock:
            self._loop = loop
            self._accepting = True
        self._ready.set()
        try:
            loop.run_forever()
            # stop() asked us to finish: cancel leftovers on our own thread.
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in pending:
                t.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError("not started")
        return self._loop

    @property
    def thread_ident(self) -> Optional[int]:
        return self._thread.ident if self._thread is not None else None

    def submit(self, coro: Coroutine[Any, Any, R]) -> "concurrent.futures.Future[R]":
        """Schedule *coro* on the helper loop; returns a concurrent Future."""
        with self._lock:
            if not self._accepting or self._loop is None:
                coro.close()
                raise BridgeClosed("loop thread is not accepting work")
            return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, R], timeout: Optional[float] = None) -> R:
        """Blocking: run *coro* on the helper loop and return its result.

        Must not be called from the helper loop itself (it would deadlock).
        On timeout the coroutine is cancelled before ``TimeoutError`` is
        raised.
        """
        if threading.get_ident() == self.thread_ident:
            coro.close()
            raise RuntimeError("run() called from the loop thread")
        fut = self.submit(coro)
        try:
            return fut.result(timeout)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise TimeoutError(f"coroutine did not finish in {timeout}s") from None

    def call(self, fn: Callable[..., R], *args: Any) -> "concurrent.futures.Future[R]":
        """Run a plain callable on the helper loop thread."""
        result: "concurrent.futures.Future[R]" = concurrent.futures.Future()

        def invoke() -> None:
            if not result.set_running_or_notify_cancel():
                return
            try:
                result.set_result(fn(*args))
            except BaseException as exc:
                result.set_exception(exc)

        with self._lock:
            if not self._accepting or self._loop is None:
                raise BridgeClosed("loop thread is not accepting work")
            self._loop.call_soon_threadsafe(invoke)
        return result

    def stop(self, timeout: float = 10.0) -> None:
        """Cancel remaining tasks, close the loop, join the thread.  Idempotent."""
        with self._lock:
            thread = self._thread
            if thread is None:
                return
            if self._accepting and self._loop is not None:
                self._accepting = False
                self._loop.call_soon_threadsafe(self._loop.stop)
        thread.join(timeout)
        if thread.is_alive():
            raise RuntimeError("loop thread did not stop")

    def __enter__(self) -> "LoopThread":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def call_in_loop(loop: asyncio.AbstractEventLoop, fn: Callable[..., R], *args: Any,
                 timeout: Optional[float] = None) -> R:
    """From a worker thread: run ``fn(*args)`` on *loop* and wait for it.

    If *fn* returns an awaitable, it is awaited on the loop first.
    """
    async def runner() -> R:
        res = fn(*args)
        if asyncio.iscoroutine(res) or isinstance(res, asyncio.Future):
            res = await res
        return res

    fut = asyncio.run_coroutine_threadsafe(runner(), loop)
    try:
        return fut.result(timeout)
    except concurrent.futures.TimeoutError:
        fut.cancel()
        raise TimeoutError(f"call did not finish in {timeout}s") from None
