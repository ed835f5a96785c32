"""An async debouncer silently drops a call queued while the previous run was in flight.

Report: https://github.com/TanStack/pacer/issues/257 (fix proposed in
https://github.com/TanStack/pacer/pull/258). Paraphrase: the async debouncer cleared its stored
"last arguments" when an execution *finished*. A call made while an execution was in flight stored
its arguments and started the wait timer; if the in-flight run finished before that timer fired,
the reset wiped the new call's arguments and the timer found nothing to run. The fix clears the
arguments when an execution starts.

Model: a 0.2 s debounced autosave. Edit A at t=0 (saved at 0.2 s, the save takes 0.05 s of I/O),
edit B at t=0.5. Both edits must be saved.
"""

import asyncio

import pytest

WAIT = 0.2
SAVE_IO = 0.05
SECOND_EDIT_AT = 0.5


class AsyncDebouncer:
    def __init__(self, fn, wait):
        self.fn = fn
        self.wait = wait
        self.last_args = None
        self.handle = None
        self.tasks = set()

    def maybe_execute(self, *args):
        self.last_args = args
        if self.handle is not None:
            self.handle.cancel()
        self.handle = asyncio.get_running_loop().call_later(self.wait, self._on_timer)

    def _on_timer(self):
        self.handle = None
        if self.last_args is None:
            return  # nothing pending
        task = asyncio.get_running_loop().create_task(self._execute(self.last_args))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _execute(self, args):
        try:
            await self.fn(*args)
        finally:
            self.last_args = None  # bug: may wipe a call queued during the run


@pytest.mark.asyncio
async def test_every_edit_is_saved():
    saved = []
    second_saved = asyncio.Event()

    async def save(doc):
        await asyncio.sleep(SAVE_IO)
        saved.append(doc)
        if doc == "B":
            second_saved.set()

    deb = AsyncDebouncer(save, WAIT)
    deb.maybe_execute("A")
    await asyncio.sleep(SECOND_EDIT_AT)
    deb.maybe_execute("B")
    try:
        await asyncio.wait_for(second_saved.wait(), 2)
    except asyncio.TimeoutError:
        pass
    finally:
        if deb.handle is not None:
            deb.handle.cancel()
        await asyncio.gather(*deb.tasks, return_exceptions=True)
    assert saved == ["A", "B"], f"saved {saved}: the trailing edit was dropped"
