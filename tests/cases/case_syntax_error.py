"""Input for tests/test_cli.py: a file that does not compile."""

import pytest


@pytest.mark.asyncio
async def test_never_compiled() -> None:
    x = (1,
