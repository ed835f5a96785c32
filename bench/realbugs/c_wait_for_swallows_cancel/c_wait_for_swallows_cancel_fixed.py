"""The same helper after the fix: a cancellation of the caller is always re-raised."""

import asyncio


async def wait_for(aw, timeout: float):
    loop = asyncio.get_running_loop()
    inner = asyncio.ensure_future(aw)
    gate = loop.create_future()

    def open_gate(_=None) -> None:
        if not gate.done():
            gate.set_result(None)

    timer = loop.call_later(timeout, open_gate)
    inner.add_done_callback(open_gate)
    try:
        try:
            await gate
        except asyncio.CancelledError:
            # Our caller was cancelled: that wins even when the operation finished in the same
            # iteration, as the rewrite on asyncio.timeout (gh-96764) made it.
            if not inner.done():
                inner.remove_done_callback(open_gate)
                inner.cancel()
                await asyncio.wait([inner])
            raise
        if inner.done():
            return inner.result()
        inner.remove_done_callback(open_gate)
        inner.cancel()
        await asyncio.wait([inner])
        raise asyncio.TimeoutError()
    finally:
        timer.cancel()


class Subscriber:
    """Handles messages until its task is cancelled; polls so it can notice idle periods."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.handled: list = []
        self.idle_polls = 0

    async def run(self) -> None:
        while True:
            try:
                message = await wait_for(self.inbox.get(), timeout=0.05)
            except asyncio.TimeoutError:
                self.idle_polls += 1
                continue
            self.handled.append(message)
