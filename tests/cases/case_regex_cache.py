"""Shows that a worker learns from its first run: the test compiles a pattern nothing else uses,
after checking whether the re module already has it cached. Under affidavit only each worker's
first run finds the cache without it; the worker compiles what that run compiled before it forks
the next one."""

import asyncio
import re

import pytest

PATTERN = r"affidavit-learned-\d+ (?:once)?"


@pytest.mark.asyncio
async def test_pattern_was_learned() -> None:
    cached = any(isinstance(k, tuple) and PATTERN in k for name in ("_cache", "_cache2") for k in getattr(re, name, {}))
    await asyncio.sleep(0)
    assert re.compile(PATTERN, re.IGNORECASE).match("AFFIDAVIT-LEARNED-7 ")
    assert cached, "not in the worker's regex cache"
