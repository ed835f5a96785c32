"""Input for tests/test_cli.py: tests whose process dies mid-run."""

import asyncio
import ctypes
import os

import pytest


@pytest.mark.asyncio
async def test_abort() -> None:
    await asyncio.sleep(0)
    os.abort()


@pytest.mark.asyncio
async def test_segfault() -> None:
    await asyncio.sleep(0)
    ctypes.string_at(0)


@pytest.mark.asyncio
async def test_exit3() -> None:
    await asyncio.sleep(0)
    os._exit(3)
