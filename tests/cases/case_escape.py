"""A test whose node id and failure message carry markup: the report must show it, inert."""

import pytest

HOSTILE = "<script>alert(1)</script>\"'</svg>&"


@pytest.mark.asyncio
@pytest.mark.parametrize("label", [HOSTILE])
async def test_hostile(label: str) -> None:
    assert label == "plain", f"failure with {HOSTILE}"
