"""Input for tests/test_cli.py: an async test that ends with SystemExit (sys.exit in the code under test).

Plain pytest reports it as a failure "SystemExit: 3"; the process itself does not exit.
"""

import asyncio
import sys

import pytest


@pytest.mark.asyncio
async def test_sys_exit() -> None:
    await asyncio.sleep(0)
    sys.exit(3)
