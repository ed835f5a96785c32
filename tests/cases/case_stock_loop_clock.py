"""Input for tests/test_cannot_lie.py: a test that runs asyncio's own loop itself (as aiorun does:
it sets asyncio's default policy and runs a stock loop), whose waits read time.monotonic. On stock
asyncio it ends in 10 ms; plain pytest passes it every time."""

import asyncio


def test_a_stock_loop_the_test_runs_itself_ends() -> None:
    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())
    try:
        asyncio.run(asyncio.sleep(0.01))
    finally:
        asyncio.set_event_loop_policy(None)
