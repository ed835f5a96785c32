"""The worker's learning from its first run (python/affidavit/worker.py): the regular expressions a
run compiles are compiled in the worker before the next fork."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import List

from affidavit import worker
from helpers import AFFIDAVIT, REPO


def test_learned_patterns_round_trip_with_their_flags() -> None:
    known = worker._regex_keys()
    re.compile(r"learn[ \t]+me", re.IGNORECASE | re.MULTILINE)
    re.compile(rb"\x00bytes?", 0)
    re.compile("x" * 20_000)  # too long to be worth carrying
    with tempfile.TemporaryFile() as f:
        worker._learn_regexes(f.fileno(), known)
        re.purge()
        assert worker._warm_regexes(f.fileno()) == 2
    keys = worker._regex_keys()
    assert any(k[1] == r"learn[ \t]+me" and k[2] == int(re.IGNORECASE | re.MULTILINE) for k in keys)
    assert any(k[1] == rb"\x00bytes?" for k in keys)
    assert not any(k[1] == "x" * 20_000 for k in keys)


def test_an_empty_lesson_compiles_nothing() -> None:
    with tempfile.TemporaryFile() as f:
        assert worker._warm_regexes(f.fileno()) == 0


def test_each_worker_learns_from_its_first_run() -> None:
    """Only the worker's first run misses the pattern: without the learning every run would, and a
    worker that learned anything but a cache would show in other tests. (One worker: the runs of
    one test go one at a time, so how many workers see it is not fixed.)"""
    proc = subprocess.run(
        [str(AFFIDAVIT), "sample", "tests/cases/case_regex_cache.py::test_pattern_was_learned", "-n", "8",
         "--workers", "1", "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    data = json.loads(proc.stdout)
    assert data["runs"] == 8, proc
    assert data["failed"] == 1, data
    assert "not in the worker's regex cache" in data["failure"], data


def _thp_mode() -> str:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return f.read().split("[", 1)[1].split("]", 1)[0]
    except (OSError, IndexError):
        return "never"


def _worker_huge_kb(tmp_path: Path, heap: str) -> List[int]:
    out = tmp_path / f"huge-{heap}.txt"
    # the worker's own memory: its runs fork from it, not from a template of the test (templates.py)
    env = {**os.environ, "AFFIDAVIT_CASE_OUT": str(out), "AFFIDAVIT_WORKER_HEAP": heap, "AFFIDAVIT_NO_TEMPLATES": "1"}
    proc = subprocess.run(
        [str(AFFIDAVIT), "sample", "tests/cases/case_worker_memory.py::test_report_worker_huge_pages", "-n", "40",
         "--workers", "1", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert json.loads(proc.stdout)["failed"] == 0, proc
    rows = [line.split() for line in out.read_text().splitlines()]
    assert len(rows) == 40 and len({pid for pid, _ in rows}) == 1, rows
    return [int(kb) for _, kb in rows]


def test_worker_memory_stays_on_huge_pages(tmp_path: Path) -> None:
    """Where THP can be asked for, the worker's arenas are on huge pages, and they stay whole
    from the first run to the last (the worker writes nothing of them while a child lives).
    AFFIDAVIT_WORKER_HEAP=0 leaves them on 4 KB pages unless THP is always on."""
    mode = _thp_mode()
    on, off = _worker_huge_kb(tmp_path, "1"), _worker_huge_kb(tmp_path, "0")
    if mode == "never":
        assert on == [0] * 40 and off == [0] * 40
        return
    assert on[0] >= 8 * 1024, (mode, on)
    assert on[-1] == on[0], on
    if mode == "madvise":
        assert max(off) < on[0], (off, on)


def test_a_lesson_that_no_longer_compiles_is_skipped() -> None:
    with tempfile.TemporaryFile() as f:
        f.write(repr([("(unclosed", 0), ("fine", 0), ("x", int(re.LOCALE))]).encode())
        f.flush()
        assert worker._warm_regexes(f.fileno()) == 1
