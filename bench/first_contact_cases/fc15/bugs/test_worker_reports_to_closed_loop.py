"""A worker thread checks ``loop.is_closed()`` and then reports to a closed loop.

Modelled on agronholm/anyio#1265 ("TOCTOU race in WorkerThread.run() ... The
guard and the call are not atomic: the main thread's loop.close() can land
*between* the is_closed() check and call_soon_threadsafe() ... RuntimeError:
Event loop is closed ... escapes the worker thread"), with the same pattern
in aio-libs/janus#2 and OpenCyphal/pycyphal#202.

``ExportWorker`` computes a result in its own thread and reports it back:
``if not loop.is_closed():`` build a summary (hashing the result, which
releases the GIL), then ``loop.call_soon_threadsafe(...)``.  The application
waits for the export with ``wait_for`` and, when that times out, returns - so
``asyncio.run`` shuts the loop down while the worker may be between its check
and its call.  The exception escapes the worker thread; the test collects
thread exceptions with ``threading.excepthook``.
"""

import asyncio
import hashlib
import threading
import time

import pytest

EXPORT_TIME = 0.05
EXPORT_TIMEOUT = 0.05
RESULT_SIZE = 1 << 20        # 1 MiB export; summarising it takes ~0.6 ms


class ExportWorker(threading.Thread):
    def __init__(self, loop, fut):
        super().__init__(daemon=True)
        self.loop, self.fut = loop, fut

    def run(self):
        time.sleep(EXPORT_TIME)                       # talk to the backend
        result = b"x" * RESULT_SIZE
        if not self.loop.is_closed():                 # check ...
            summary = hashlib.sha256(result).hexdigest()[:12]
            self.loop.call_soon_threadsafe(           # ... then act
                _report, self.fut, (summary, len(result)))


def _report(fut, value):
    if not fut.done():
        fut.set_result(value)


async def export_with_deadline():
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    worker = ExportWorker(loop, fut)
    worker.start()
    try:
        return await asyncio.wait_for(fut, EXPORT_TIMEOUT), worker
    except asyncio.TimeoutError:
        return None, worker                           # report "pending" and quit


def test_worker_never_crashes_on_shutdown():
    crashes = []
    previous = threading.excepthook
    threading.excepthook = lambda args: crashes.append(args.exc_value)
    try:
        for _ in range(5):                            # a CLI run a few times
            _result, worker = asyncio.run(export_with_deadline())
            worker.join(5)
    finally:
        threading.excepthook = previous
    assert not crashes, [repr(c) for c in crashes]
