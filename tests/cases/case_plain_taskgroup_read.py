"""A read before a background task's write, inside a TaskGroup."""

import asyncio
import random

import pytest


REPORT: dict = {}


async def finalize_report() -> None:
    await asyncio.sleep(random.uniform(0, 0.002))  # rendering takes a variable time
    REPORT["status"] = "done"


async def read_status() -> str:
    await asyncio.sleep(0.001)  # "rendering is quick; 1 ms is plenty"
    return REPORT.get("status", "missing")


@pytest.mark.asyncio
async def test_report_is_finalized() -> None:
    REPORT.clear()
    async with asyncio.TaskGroup() as tg:
        tg.create_task(finalize_report())
        status = tg.create_task(read_status())
    assert status.result() == "done"
