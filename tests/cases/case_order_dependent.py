"""Input for tests/test_cannot_lie.py: a test that passes only after the test before it.

Both tests share a module-scoped fixture; the second counts on the first having used it. Under
plain pytest of the file both pass; pytest of the second alone fails it, on asyncio's own loop, as
every run of it alone does. Exploring it must not turn it red: its failure needs no schedule, and
it is listed as not explored with that reason.
"""

import asyncio

import pytest
import pytest_asyncio


class Server:
    def __init__(self) -> None:
        self.served = 0

    async def serve(self) -> None:
        await asyncio.sleep(0)
        self.served += 1


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> Server:
    return Server()


@pytest.mark.asyncio(loop_scope="module")
async def test_the_first_request(server: Server) -> None:
    await server.serve()
    assert server.served == 1


@pytest.mark.asyncio(loop_scope="module")
async def test_the_second_request_counts_both(server: Server) -> None:
    await server.serve()
    assert server.served >= 2
