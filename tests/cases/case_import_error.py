"""Input for tests/test_cli.py: a file that fails at import time."""

import pytest

raise ImportError("case_import_error: this module cannot be imported")


@pytest.mark.asyncio
async def test_never_imported() -> None:
    pass
