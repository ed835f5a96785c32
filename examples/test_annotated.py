"""The TaskGroup read-before-write, annotated with affidavit's operation and assertion."""

import asyncio
import random

import pytest

from affidavit import assertion, operation

REPORT: dict = {}


@operation("finalize_report", resource="report.status", access="write")
async def finalize_report() -> None:
    await asyncio.sleep(random.uniform(0, 0.002))
    REPORT["status"] = "done"


@operation("read_status", resource="report.status", access="read")
async def read_status() -> str:
    await asyncio.sleep(0.001)
    return REPORT.get("status", "missing")


@pytest.mark.asyncio
async def test_report_is_finalized() -> None:
    REPORT.clear()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(finalize_report())
        status = tg.create_task(read_status())
    with assertion("report.status"):
        assert status.result() == "done"
