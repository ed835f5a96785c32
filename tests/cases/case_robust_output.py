"""Run under `--affidavit-explore` with addopts that write the session's output (--cov,
--junitxml, --basetemp; tests/test_plugin_robust.py): each run says whether coverage measured it,
in a worker of the engine or in the session itself."""

import asyncio
import sys
from pathlib import Path

import pytest


def _record(tag: str) -> None:
    import coverage

    worker = sys.modules.get("affidavit.worker")
    where = "worker" if getattr(worker, "ACTIVE", False) else "session"
    measured = coverage.Coverage.current() is not None
    with open(Path(__file__).with_name("seen.txt"), "a") as f:
        f.write(f"{tag} {where} {'measured' if measured else 'unmeasured'}\n")


@pytest.mark.asyncio
async def test_async_under_coverage(tmp_path):
    (tmp_path / "mine").write_text("x")
    await asyncio.sleep(0)
    _record("async")


def test_sync_no_loop():
    _record("sync")

