"""A device worker thread signals readiness with asyncio.Event.set().

Modelled on home-assistant/core#62418 (wemo tests scheduled asyncio.Event.set
so that it ran outside the event loop thread; fixed by setting it on the loop)
and fanout/django-eventstream#81 ("safely call Event.set() across threads").
python/cpython#122938 shows the symptom: a task parked in Event.wait() is not
resumed when nothing else wakes the loop.

The worker opens the device (hashing a firmware image, GIL released), sets
`ready` directly from its thread, and then waits up to 1 s for the loop's
"go" before it gives up and closes the device.  The coroutine registers a
metrics hook first (a short sleep) and then awaits `ready`.  If the worker
sets the event before the coroutine waits, all is well; if the coroutine is
already parked, set() resolves its waiter from the wrong thread, the loop is
not woken, and the handshake times out on the worker side.

Kind: race (thread hands a result to the loop unsafely).
"""
import asyncio
import hashlib
import threading

import pytest

REGISTER_METRICS = 0.002             # coroutine work before it waits on `ready`
FIRMWARE = b"\xa5" * 4_300_000       # hashed by the worker before it is ready


class Device:
    def __init__(self):
        self.ready = asyncio.Event()
        self.go = threading.Event()
        self.handshake_ok = None
        self.thread = threading.Thread(target=self._run, name="fc16-device")

    def _run(self):
        hashlib.sha256(FIRMWARE).digest()
        self.ready.set()  # BUG: asyncio.Event touched from a foreign thread
        self.handshake_ok = self.go.wait(1.0)

    async def start(self):
        self.thread.start()
        await asyncio.sleep(REGISTER_METRICS)
        await self.ready.wait()
        self.go.set()

    async def join(self):
        await asyncio.to_thread(self.thread.join)


@pytest.mark.asyncio
async def test_device_handshake_completes():
    dev = Device()
    try:
        await asyncio.wait_for(dev.start(), 2.0)
    finally:
        dev.go.set()
        await dev.join()
    assert dev.handshake_ok, "worker gave up waiting for the loop's go signal"
