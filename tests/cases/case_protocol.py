"""Runs must give pytest's verdict. The warnings plugin applies a test's filterwarnings mark around
the run protocol, so under pytest the first test fails (its warning is an error) and the second
passes (the same warning, no mark); the third passes with a strict xfail mark a fixture adds, so
under pytest it fails."""

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


@pytest.fixture
def known_bug(request: pytest.FixtureRequest) -> None:
    request.node.add_marker(pytest.mark.xfail(reason="known bug", strict=True))


@pytest.mark.asyncio
async def test_strict_xfail_added_by_a_fixture(known_bug: None) -> None:
    """Passes, so under pytest it fails: [XPASS(strict)]. The mark comes during setup."""
    await asyncio.sleep(0)
