"""Reports, from inside each run, how much of its worker's memory is on huge pages: the run's
parent is the fork server. Appends "worker-pid kB" to the file named by AFFIDAVIT_CASE_OUT."""

import asyncio
import os

import pytest


@pytest.mark.asyncio
async def test_report_worker_huge_pages() -> None:
    await asyncio.sleep(0)
    with open(f"/proc/{os.getppid()}/smaps_rollup") as f:
        kb = next((int(line.split()[1]) for line in f if line.startswith("AnonHugePages:")), 0)
    with open(os.environ["AFFIDAVIT_CASE_OUT"], "a") as out:
        out.write(f"{os.getppid()} {kb}\n")
