"""Runs must go through pytest's whole run protocol, hook wrappers included: the warnings plugin
applies a test's filterwarnings mark around the run, so under pytest the first test fails (its
warning is an error) and the second passes (the same warning, no mark)."""

import asyncio
import warnings

import pytest


@pytest.mark.filterwarnings("error::DeprecationWarning")
@pytest.mark.asyncio
async def test_warning_is_an_error() -> None:
    await asyncio.sleep(0)
    warnings.warn("old api", DeprecationWarning)


@pytest.mark.asyncio
async def test_warning_is_only_a_warning() -> None:
    await asyncio.sleep(0)
    warnings.warn("old api", DeprecationWarning)
