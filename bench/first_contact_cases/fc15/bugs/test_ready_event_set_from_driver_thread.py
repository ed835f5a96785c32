"""A driver thread sets an ``asyncio.Event`` directly; the loop may sleep through it.

Modelled on EVerest/everest-utils#121 ("asyncio.Event is not thread safe ...
``wait`` waits until timeout, since it only learns about being signaled after
the timeout") and vllm-project/vllm#22576 (``await self.ready.wait()`` stays
blocked although the event was set from another thread).

``ProbeModule`` starts a background "driver" thread that connects to a device
and then calls ``self._ready.set()`` - a plain ``asyncio.Event`` - from that
thread.  If the event is set before anybody waits, ``wait()`` returns at once.
If the main task is already parked in ``wait()``, ``set()`` resolves the
waiter future from the wrong thread: the wake-up lands in the loop's ready
queue via ``call_soon`` but nothing writes to the self-pipe, so a loop that is
blocked in ``select()`` only notices at its next timer - here the
``wait_for`` deadline, one second later.
"""

import asyncio
import threading
import time

import pytest

CONNECT_TIME = 0.0203      # the driver's handshake with the device (in its thread)
LOCAL_SETUP = 0.02       # the application's own start-up work before it waits
READY_TIMEOUT = 1.0


class ProbeModule:
    def __init__(self):
        self._ready = asyncio.Event()
        self._thread = None
        self.connected_at = None

    def _driver_main(self):
        time.sleep(CONNECT_TIME)          # blocking connect in the driver thread
        self.connected_at = time.monotonic()
        self._ready.set()                 # BUG: not call_soon_threadsafe

    def start(self):
        self._thread = threading.Thread(target=self._driver_main, daemon=True)
        self._thread.start()

    async def wait_ready(self):
        await asyncio.wait_for(self._ready.wait(), READY_TIMEOUT)

    def join(self):
        self._thread.join(5)


@pytest.mark.asyncio
async def test_module_reports_ready_promptly():
    probe = ProbeModule()
    probe.start()
    await asyncio.sleep(LOCAL_SETUP)      # load config, open log files, ...
    await probe.wait_ready()
    woke_at = time.monotonic()
    probe.join()
    # The device was ready; the application should notice within a blink,
    # not at the next unrelated timer.
    assert woke_at - probe.connected_at < 0.5, (
        f"noticed readiness {woke_at - probe.connected_at:.3f}s late")
