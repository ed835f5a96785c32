"""A test that puts what it likes in user_properties, as some plugins do: pytest runs on, and so
must `--affidavit-explore` (tests/test_plugin_robust.py)."""

import asyncio

import pytest


@pytest.mark.asyncio
async def test_properties_not_pairs(request):
    request.node.user_properties.append("not a pair")
    request.node.user_properties.append(("three", "items", "here"))
    await asyncio.sleep(0)
