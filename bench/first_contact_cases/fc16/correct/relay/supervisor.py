"""Start worker threads, stop them cooperatively, and always join them."""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable, Dict, List, Optional

from .errors import Closed


class ThreadSupervisor:
    """Owns a group of threads that share one ``stop`` event.

    Each target is called as ``target(stop_event, *args)`` and must return
    soon after ``stop_event`` is set.  Uncaught exceptions are recorded in
    ``errors`` (name -> exception) instead of being printed by the thread.
    """

    def __init__(self, prefix: str = "relay-sup") -> None:
        self.prefix = prefix
        self.stop_event = threading.Event()
        self._threads: List[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False
        self.errors: Dict[str, BaseException] = {}
        self.results: Dict[str, Any] = {}

    def spawn(self, name: str, target: Callable[..., Any], *args: Any) -> threading.Thread:
        full = f"{self.prefix}-{name}"

        def body() -> None:
            try:
                self.results[full] = target(self.stop_event, *args)
            except BaseException as e:  # noqa: BLE001 - recorded for the owner
                with self._lock:
                    self.errors[full] = e

        with self._lock:
            if self._closed:
                raise Closed("supervisor is shut down")
            t = threading.Thread(target=body, name=full, daemon=True)
            self._threads.append(t)
            t.start()
        return t

    @property
    def alive(self) -> List[str]:
        with self._lock:
            return [t.name for t in self._threads if t.is_alive()]

    def _join_all(self, timeout: Optional[float]) -> List[str]:
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(timeout)
        return [t.name for t in threads if t.is_alive()]

    async def shutdown(self, timeout: Optional[float] = 20.0) -> List[str]:
        """Set the stop event and join every thread without blocking the loop.

        Returns the names of threads that did not finish in ``timeout``.
        """
        with self._lock:
            self._closed = True
        self.stop_event.set()
        return await asyncio.to_thread(self._join_all, timeout)


def periodic(interval: float, fn: Callable[[], Any]) -> Callable[[threading.Event], int]:
    """Build a supervisor target that calls ``fn`` every ``interval``."""
    def target(stop: threading.Event) -> int:
        n = 0
        while not stop.wait(interval):
            fn()
            n += 1
        return n
    return target
