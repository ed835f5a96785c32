"""Cross-thread calls in both directions.

* ``call_from_thread(loop, fn_or_coro_fn, *args)``: a worker thread runs
  something on the main loop and blocks for the answer
  (``run_coroutine_threadsafe``).
* ``BackgroundLoop``: a private loop in a helper thread that the main loop
  (or any thread) can submit coroutines to.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from typing import Any, Callable, Coroutine, Optional

from .errors import Closed


def call_from_thread(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any],
                     *args: Any, timeout: Optional[float] = 20.0) -> Any:
    """From a non-loop thread, run ``fn(*args)`` on ``loop`` and wait."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise RuntimeError("call_from_thread called from the loop thread")

    async def runner() -> Any:
        result = fn(*args)
        if inspect.isawaitable(result):
            result = await result
        return result

    cfut = asyncio.run_coroutine_threadsafe(runner(), loop)
    try:
        return cfut.result(timeout)
    except concurrent.futures.TimeoutError:
        cfut.cancel()
        raise


class BackgroundLoop:
    def __init__(self, name: str = "relay-bgloop") -> None:
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._closed = False
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)

    def start(self) -> "BackgroundLoop":
        self.thread.start()
        self._ready.wait()
        return self

    def __enter__(self) -> "BackgroundLoop":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self.loop = loop
        loop.call_soon(self._ready.set)
        try:
            loop.run_forever()
            tasks = asyncio.all_tasks(loop)
            for t in tasks:
                t.cancel()
            if tasks:
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        with self._lock:
            if self._closed:
                coro.close()
                raise Closed("background loop is stopped")
            return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, Any], timeout: Optional[float] = 20.0) -> Any:
        """Blocking: submit and wait (from a thread that is not this loop's)."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("BackgroundLoop.run called from its own thread")
        cfut = self.submit(coro)
        try:
            return cfut.result(timeout)
        except concurrent.futures.TimeoutError:
            cfut.cancel()
            raise

    async def arun(self, coro: Coroutine[Any, Any, Any],
                   timeout: Optional[float] = None) -> Any:
        """From another loop: await a coroutine that runs on this loop."""
        afut = asyncio.wrap_future(self.submit(coro))
        return await asyncio.wait_for(afut, timeout)

    def stop(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.loop is not None:
                self.loop.call_soon_threadsafe(self.loop.stop)
        if self.thread.ident is not None:
            self.thread.join()
