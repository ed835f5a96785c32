import asyncio

EVENTUALLY = 20.0  # generous "eventually" bound in seconds
EPS = 0.005        # slack for lower bounds that the code guarantees


async def wait_until(pred, timeout=EVENTUALLY, step=0.005):
    async with asyncio.timeout(timeout):
        while not pred():
            await asyncio.sleep(step)


class ManualClock:
    def __init__(self, start=100.0):
        self.now = start

    def __call__(self):
        return self.now

    def advance(self, dt):
        self.now += dt
