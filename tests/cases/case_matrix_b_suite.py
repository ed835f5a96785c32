"""The version-matrix project's tests (tests/test_plugin_matrix.py): what every pytest-asyncio
from 0.21 to 1.x runs, plus an async test no plugin runs in strict mode (pytest skips it)."""

import asyncio

import pytest


@pytest.mark.asyncio
async def test_marked():
    await asyncio.sleep(0.01)


class TestInAClass:
    @pytest.mark.asyncio
    async def test_method(self):
        await asyncio.gather(asyncio.sleep(0), asyncio.sleep(0))


def test_asyncio_run():
    assert asyncio.run(asyncio.sleep(0, result=3)) == 3


def test_no_loop():
    assert "a" * 2 == "aa"


async def test_unmarked():  # strict mode: skipped by pytest, listed with that reason
    await asyncio.sleep(0)
