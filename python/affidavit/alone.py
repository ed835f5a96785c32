"""pytest -p affidavit.alone NODEID: one test under plain pytest, on asyncio's own loop, with its
failure written where the environment's AFFIDAVIT_ALONE_OUT names, in the workers' form
("path:line: what", worker._summarize).

The explore plugin runs it for a test that passed in the session and failed explored: if the
test fails the same way alone, with nothing of affidavit's in the process but this file, the
failure belongs to what ran before it in the session, not to a schedule. The affidavit plugin,
loaded in that pytest like any installed plugin, does nothing there (its pytest_configure
sees OUT set)."""

from __future__ import annotations

import json
import os
from typing import Any, List

import pytest

OUT = "AFFIDAVIT_ALONE_OUT"


class _Reports:
    def __init__(self, path: str) -> None:
        self.path = path
        self.reports: List[Any] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.append(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from .worker import _summarize  # the same failure line as an explored run's

        _, failure = _summarize(self.reports)
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump({"failed": any(r.failed for r in self.reports), "failure": failure}, f)


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.get(OUT)
    if path:
        config.pluginmanager.register(_Reports(path), "affidavit-alone-reports")
