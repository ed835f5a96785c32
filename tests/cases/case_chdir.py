"""The lost update of case_plain_lost_update.py: as it is, with tmp_path, and in tests that change the
working directory."""

import asyncio
import os
import random
from pathlib import Path

import pytest


BALANCE = {"amount": 0}


async def deposit(amount: int) -> None:
    await asyncio.sleep(random.uniform(0, 0.003))  # the request arrives after some network latency
    current = BALANCE["amount"]
    await asyncio.sleep(0.0005)  # the ledger write takes a moment
    BALANCE["amount"] = current + amount


@pytest.mark.asyncio
async def test_deposits() -> None:
    BALANCE["amount"] = 0
    await asyncio.gather(deposit(10), deposit(20))
    assert BALANCE["amount"] == 30


@pytest.mark.asyncio
async def test_deposits_with_tmp_path(tmp_path: Path) -> None:
    BALANCE["amount"] = 0
    await asyncio.gather(deposit(10), deposit(20))
    (tmp_path / "balance").write_text(str(BALANCE["amount"]))
    assert BALANCE["amount"] == 30


@pytest.mark.asyncio
async def test_deposits_after_chdir() -> None:
    here = os.getcwd()
    os.chdir("/tmp")
    try:
        BALANCE["amount"] = 0
        await asyncio.gather(deposit(10), deposit(20))
        assert BALANCE["amount"] == 30
    finally:
        os.chdir(here)


@pytest.mark.asyncio
async def test_deposits_after_monkeypatch_chdir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    BALANCE["amount"] = 0
    await asyncio.gather(deposit(10), deposit(20))
    assert BALANCE["amount"] == 30
