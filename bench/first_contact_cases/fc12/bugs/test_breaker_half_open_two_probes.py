"""Model of the half-open problem discussed in https://github.com/Skyscanner/pyfailsafe/pull/31
("Added half-open state": the review notes that while the first half-open request is being
resolved, more requests go through, because the half-open state's allows_execution() always
returns True).

The breaker opened at t=0 (reset_timeout 0.1 s). Client A calls at 0.15 s: the breaker goes
half-open and A's call is the probe (the backend answers in 0.05 s). Client B calls at 0.4 s.
Under natural timing A's probe has closed the breaker before B arrives, so the recovering backend
sees one probe while half-open.

Bad interleaving: A's backend call is slower than 0.25 s (its await outlasts B's start). B finds
the breaker still half-open and is let through too: two concurrent probes hit the backend that
the half-open state is meant to protect.
"""
import asyncio

import pytest


class Breaker:
    def __init__(self, reset_timeout):
        self.state, self.reset_timeout = "open", reset_timeout
        self.opened_at = asyncio.get_running_loop().time()

    def allows_execution(self):
        if self.state == "open" and asyncio.get_running_loop().time() - self.opened_at >= self.reset_timeout:
            self.state = "half_open"
        return self.state != "open"  # half-open: always True (the reported flaw)

    async def call(self, fn):
        if not self.allows_execution():
            raise RuntimeError("open")
        probe = self.state == "half_open"
        result = await fn(probe)
        self.state = "closed"
        return result


@pytest.mark.asyncio
async def test_half_open_sends_one_probe():
    breaker = Breaker(reset_timeout=0.1)
    probes_in_flight, max_probes = 0, 0

    async def backend(probe):
        nonlocal probes_in_flight, max_probes
        if probe:
            probes_in_flight += 1
            max_probes = max(max_probes, probes_in_flight)
        try:
            await asyncio.sleep(0.05)
        finally:
            if probe:
                probes_in_flight -= 1
        return "ok"

    async def client(delay):
        await asyncio.sleep(delay)
        return await breaker.call(backend)

    results = await asyncio.wait_for(asyncio.gather(client(0.15), client(0.4)), 20)
    assert results == ["ok", "ok"]
    assert max_probes == 1, f"{max_probes} concurrent probes while half-open"
