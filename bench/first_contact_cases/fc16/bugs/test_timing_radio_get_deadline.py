"""A radio GET waits for its decoded reply under a 50 ms deadline.

Modelled on rigplane/rigplane-core#2940 ("widen the CI-V GET timeout used by
flaky test fixtures"): the test fixtures built the radio with a 0.05 s
timeout, the mock transport had already queued the right answer, and the
runtime awaited it under asyncio.wait_for(pending, 0.05); on a contended
host the reply sometimes arrived later than 50 ms and the wait timed out
legitimately.  The fix raised the fixture timeout to the production cap (2 s).

Here the transport thread decodes the state dumps that answer each GET (a
~290 KB JSON document, DUMPS_PER_GET times) and hands the reply back to the loop correctly with
call_soon_threadsafe.  There is no wrong interleaving: the decode is simply
sometimes slower than the deadline.

Kind: threshold (pure timing; a slow step crosses a fixed timeout).
"""
import asyncio
import json
import queue
import threading

import pytest

GET_TIMEOUT = 0.05
GETS = 4
DUMPS_PER_GET = 7
STATE_DUMP = json.dumps(
    [{"i": i, "name": f"item{i}", "tags": ["a", "b", str(i % 7)], "v": i * 1.5} for i in range(4000)]
)


class MockTransport:
    def __init__(self, loop):
        self.loop = loop
        self.requests = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="fc16-civ")
        self.thread.start()

    def _serve(self):
        while True:
            item = self.requests.get()
            if item is None:
                return
            fut, command = item
            frames = [json.loads(STATE_DUMP) for _ in range(DUMPS_PER_GET)]  # decode the reply
            reply = (command, len(frames[-1]))
            self.loop.call_soon_threadsafe(lambda f=fut, r=reply: f.done() or f.set_result(r))

    async def get(self, command):
        fut = self.loop.create_future()
        self.requests.put((fut, command))
        return await asyncio.wait_for(fut, GET_TIMEOUT)

    async def close(self):
        self.requests.put(None)
        await asyncio.to_thread(self.thread.join)


@pytest.mark.asyncio
async def test_get_frequency_answers_within_deadline():
    radio = MockTransport(asyncio.get_running_loop())
    try:
        for n in range(GETS):
            command, size = await radio.get(f"freq-{n}")
            assert command == f"freq-{n}" and size == 4000
    finally:
        await radio.close()
