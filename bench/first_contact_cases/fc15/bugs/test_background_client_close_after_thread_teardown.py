"""Closing a background-loop client races the thread closing its own loop.

Modelled on RailtownAI/railtracks#1405 ("When MCP server setup fails, the
background thread signals shutdown, then tears down its own event loop.  The
main thread, woken by the same signal, calls self.close(), which calls
call_soon_threadsafe on that loop.  Nothing orders these two ... close()
raises RuntimeError: Event loop is closed and the real setup error ...
drops") and zigpy/bellows#727 (the same "Event loop is closed" race in
``EventLoopThread.force_stop``).

``BackgroundClient`` runs its session on a private loop in a thread.  When
setup fails the thread records the error, sets ``_signal``, logs a report and
closes its loop.  ``start()`` waits for ``_signal`` and, on failure, calls
``close()`` before re-raising the setup error; ``close()`` checks
``self._loop is not None`` - it is never cleared - and calls
``call_soon_threadsafe``.  Whether the caller gets the setup error or a
``RuntimeError`` depends on which thread gets there first.
"""

import asyncio
import threading
import traceback

import pytest


class BackgroundClient:
    def __init__(self, command):
        self.command = command
        self._signal = threading.Event()
        self._loop = None
        self._stop = None
        self._error = None
        self._thread = threading.Thread(target=self._main, daemon=True)

    async def _session(self):
        self._stop = asyncio.Event()
        raise FileNotFoundError(f"server executable not found: {self.command}")

    def _main(self):
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._session())
        except Exception as exc:
            self._error = exc
            self._signal.set()                    # wake the caller ...
            report = "".join(traceback.format_exception(exc))
            self.last_report = report             # ... log what went wrong
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()                          # ... and tear down

    def close(self):
        if self._loop is not None:                # BUG: nothing orders this with
            self._loop.call_soon_threadsafe(self._stop.set)  # the thread's close()
        self._thread.join(5)

    async def start(self):
        self._thread.start()
        await asyncio.to_thread(self._signal.wait, 5)
        if self._error is not None:
            self.close()
            raise self._error


@pytest.mark.asyncio
async def test_setup_error_reaches_the_caller():
    client = BackgroundClient("/opt/missing/mcp-server")
    with pytest.raises(FileNotFoundError, match="not found"):
        await client.start()
