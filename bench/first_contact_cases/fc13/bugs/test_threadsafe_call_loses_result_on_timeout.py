"""A sync caller's timeout loses a message that the coroutine had already taken.

Report: https://github.com/ydb-platform/ydb-python-sdk/pull/227 ("fix sync call timeout";
observed as rare lost topic messages). Paraphrase: the sync wrapper ran the reader coroutine with
``run_coroutine_threadsafe(...).result(timeout)`` and cancelled the future on timeout. If the
coroutine had already taken a message from the buffer when the timeout hit, the cancel won the race
on the concurrent future, the caller saw a timeout and the message was gone.

Model: sync code in a worker thread (``asyncio.to_thread``) reads one message from a connection
object that lives on the test's loop, through ``run_coroutine_threadsafe(...).result(0.5)``. The
read waits 0.02 s for the network, takes the message from the buffer and decodes it (a blocking,
normally instant step).
"""

import asyncio
import collections
import concurrent.futures
import time

import pytest

NET_IO = 0.02
DECODE = 0.0          # blocking decode step after the message was taken
CALL_TIMEOUT = 0.5


class Connection:
    def __init__(self, messages):
        self.buffer = collections.deque(messages)

    async def read_message(self):
        await asyncio.sleep(NET_IO)
        raw = self.buffer.popleft()
        time.sleep(DECODE)  # parsing on the loop thread
        return raw.upper()


def sync_read(conn, loop):
    fut = asyncio.run_coroutine_threadsafe(conn.read_message(), loop)
    try:
        return fut.result(CALL_TIMEOUT)
    except concurrent.futures.TimeoutError:
        fut.cancel()
        return None


@pytest.mark.asyncio
async def test_timed_out_read_leaves_the_message_in_the_buffer():
    loop = asyncio.get_running_loop()
    conn = Connection(["m1", "m2"])
    got = await asyncio.wait_for(asyncio.to_thread(sync_read, conn, loop), 10)
    await asyncio.sleep(0.01)  # let a cancelled read finish unwinding
    delivered = [got.lower()] if got else []
    assert delivered + list(conn.buffer) == ["m1", "m2"], (
        f"message lost: delivered={delivered}, still buffered={list(conn.buffer)}"
    )
