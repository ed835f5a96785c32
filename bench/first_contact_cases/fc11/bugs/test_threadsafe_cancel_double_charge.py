"""Model of https://github.com/python/cpython/issues/105836 (fixed by
https://github.com/python/cpython/pull/141696): cancelling the
``concurrent.futures.Future`` returned by ``run_coroutine_threadsafe`` returns
True at once in the calling thread, while the asyncio task is only asked to
cancel later, when the loop gets to it; until then it keeps running. A thread that
treats a successful ``cancel()`` as "the operation did not happen" can be wrong.

Model (stock asyncio): a checkout worker thread charges a card through the loop
with a 1 s deadline. The charge is committed at the gateway in its first step and
then waits 0.3 s for the receipt. On deadline the thread cancels and falls back
to sending an invoice. Under natural timing the receipt arrives at 0.3 s. If a
loop step takes longer than the deadline, the thread's ``cancel()`` succeeds
after the card was already charged, and the customer is billed twice.
"""
import asyncio
import concurrent.futures
import threading

import pytest


class Ledger:
    def __init__(self):
        self.entries = []
        self.lock = threading.Lock()

    def add(self, entry):
        with self.lock:
            self.entries.append(entry)


async def charge_card(ledger, order):
    ledger.add((order, "card"))  # the gateway has committed the charge
    await asyncio.sleep(0.3)  # receipt round trip
    return "receipt"


def checkout(loop, ledger, order):
    fut = asyncio.run_coroutine_threadsafe(charge_card(ledger, order), loop)
    try:
        return fut.result(timeout=1.0)
    except concurrent.futures.TimeoutError:
        if fut.cancel():
            ledger.add((order, "invoice"))  # "card charge was abandoned"
            return "invoiced"
        return fut.result()


@pytest.mark.asyncio
async def test_order_is_billed_once():
    loop = asyncio.get_running_loop()
    ledger = Ledger()
    outcome = await asyncio.to_thread(checkout, loop, ledger, "order-7")
    await asyncio.sleep(0.05)
    assert outcome in ("receipt", "invoiced")
    assert len(ledger.entries) == 1, f"billed twice: {ledger.entries}"
