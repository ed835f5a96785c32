"""pytest -p affidavit.alone NODEID: one test under plain pytest, on asyncio's own loop, with its
failure written where the environment's AFFIDAVIT_ALONE_OUT names, in the workers' form
("path:line: what", worker._summarize).

The explore plugin runs it (fails_alone) for a test that passed in the session and failed
explored: if the test fails the same way alone, with nothing of affidavit's in the process but this file, the
failure belongs to what ran before it in the session, not to a schedule. The affidavit plugin,
loaded in that pytest like any installed plugin, does nothing there (its pytest_configure
sees OUT set)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from typing import Any, Dict, List

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


def same_failure(a: str, b: str) -> bool:
    """Two engine failure lines ("path:line: what") alike, the paths compared by their last part."""
    (wa, _, ma), (wb, _, mb) = a.partition(": "), b.partition(": ")
    return bool(a) and ma == mb and os.path.basename(wa) == os.path.basename(wb)


def fails_alone(nodeid: str, failure: str, python: str, args: List[str], cwd: str, env: Dict[str, str],
                timeout: float) -> bool:
    """Whether the test, run alone under plain pytest (asyncio's own loop, nothing of affidavit's but
    this file to write its failure down), fails as the explored run did. It passed in the session,
    after the tests before it; alone, its module's and session's fixtures are made afresh. A failure
    it gives then is its dependence on the tests before it (a counter in a fixture of a wider scope,
    what they leave behind), not a race."""
    with tempfile.TemporaryDirectory(prefix="affidavit-alone-") as tmp:
        out = os.path.join(tmp, "alone.json")
        cmd = [python, "-m", "pytest", nodeid, "-p", "affidavit.alone", "-p", "no:cacheprovider", "-q", *args]
        try:
            subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                           env=dict(env, **{OUT: out}))
            with open(out, encoding="utf-8") as f:
                d = json.load(f)
        except (subprocess.TimeoutExpired, OSError, ValueError):
            return False
    return bool(d.get("failed")) and same_failure(str(d.get("failure") or ""), failure)
