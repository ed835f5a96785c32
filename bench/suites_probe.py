"""A pytest plugin bench/suites.py loads (-p suites_probe) in a collect-only session: it writes the
node ids of the collected tests that are async (a coroutine function, an anyio mark, or a method of
unittest's IsolatedAsyncioTestCase) to the file named by SUITES_PROBE_OUT, one per line. It counts
the tests the acceptance speaks of: every async test that passes plainly must be explored or listed
as not explored."""

from __future__ import annotations

import inspect
import os
import unittest
from typing import List

import pytest


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    out = os.environ.get("SUITES_PROBE_OUT")
    if not out:
        return
    with open(out, "w", encoding="utf-8") as f:
        for item in items:
            fn = getattr(item, "obj", None)
            cls = getattr(item, "cls", None)
            if (inspect.iscoroutinefunction(fn) or item.get_closest_marker("anyio") is not None
                    or (cls is not None and issubclass(cls, unittest.IsolatedAsyncioTestCase))):
                f.write(item.nodeid + "\n")
