"""The pytest plugin on suites it did not write: --affidavit, --affidavit-explore (sharded), the
replay mark and option, settings from pyproject.toml, and a suite with no async tests."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import List, Tuple

from helpers import AFFIDAVIT, PYTHON, REPO

ALWAYS_LOSES = '''
import asyncio

import pytest

BALANCE = {"amount": 0}


async def deposit(n: int) -> None:
    current = BALANCE["amount"]
    await asyncio.sleep(0)  # every deposit yields between its read and its write
    BALANCE["amount"] = current + n


@pytest.mark.asyncio
async def test_deposits_add_up() -> None:
    BALANCE["amount"] = 0
    await asyncio.gather(deposit(1), deposit(2))
    assert BALANCE["amount"] == 3
'''

SYNC_ONLY = '''
def test_one() -> None:
    assert 1 + 1 == 2


def test_two() -> None:
    assert "a" * 2 == "aa"


def test_fails() -> None:
    assert [1, 2] == [1, 3]
'''


def pytest_run(cwd: Path, *args: str, timeout: float = 600) -> Tuple[int, str]:
    p = subprocess.run([PYTHON, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd, capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def project(tmp_path: Path, files: List[str], extra: str = "") -> Path:
    """A copy of some examples as its own project (its own rootdir, store and reports)."""
    root = tmp_path / "project"
    root.mkdir()
    for name in files:
        shutil.copy(REPO / "examples" / name, root / name)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\nasyncio_default_fixture_loop_scope = '
                                         '"function"\n' + extra)
    return root


def test_affidavit_investigates_what_failed(tmp_path: Path) -> None:
    root = project(tmp_path, ["test_event_flag.py", "test_queue_drain.py"])
    (root / "test_always_loses.py").write_text(ALWAYS_LOSES)
    rc, out = pytest_run(root, "--affidavit", "-q")
    assert rc == 1, out
    summary = out[out.index("= affidavit ="):]
    block = summary[summary.index("test_always_loses.py::test_deposits_add_up"):]
    block = block.split("\n\n")[0]
    assert "cause:    lost update on test_always_loses.BALANCE[\"amount\"]" in block, block
    assert re.search(r"token:    afd1:[a-z0-9]+", block), block
    assert "fix:      LOCK, verified" in block, block
    report = re.search(r"report:   (\S+\.html)", block)
    assert report and (root / report.group(1)).exists(), block
    # every failed test has a block; the files were not touched
    for line in re.findall(r"^FAILED (\S+)", out, re.M):
        assert line in summary
    assert (root / "test_always_loses.py").read_text() == ALWAYS_LOSES
    assert not list(root.glob("*.orig"))


def test_under_xdist_the_controller_investigates_after_the_workers(tmp_path: Path) -> None:
    root = project(tmp_path, [])
    (root / "test_always_loses.py").write_text(ALWAYS_LOSES)
    (root / "test_plain.py").write_text(SYNC_ONLY)
    rc, out = pytest_run(root, "-n", "2", "--affidavit", "-q")
    assert rc == 1, out
    assert "2 workers" in out or "created: 2/2 workers" in out or "[gw" in out or "bringing up nodes" in out, out
    summary = out[out.index("= affidavit ="):]
    assert summary.count("= affidavit =") == 1  # once, by the controller
    assert "test_always_loses.py::test_deposits_add_up" in summary and "fix:      LOCK, verified" in summary
    # the sync failure is investigated too, and says why it has no schedule to search
    assert "test_plain.py::test_fails" in summary


def test_explore_turns_the_rare_flake_red_with_a_token(tmp_path: Path) -> None:
    root = project(tmp_path, ["test_rare_flake.py"])
    rc, out = pytest_run(root, "--affidavit-explore=200", "-q")
    assert rc == 1, out
    assert "passed on its own, but fails under a controlled schedule" in out, out
    assert re.search(r"cause:  order violation on .*token", out), out  # the minimal cause, named
    token = re.search(r"token:  (afd1:[a-z0-9]+)", out)
    assert token, out
    # the token replays the failure through the engine, and through the plugin
    p = subprocess.run([AFFIDAVIT, "replay", token.group(1), "test_rare_flake.py::test_uses_fresh_token", "-n", "3",
                        "--json"], cwd=root, capture_output=True, text=True)
    assert json.loads(p.stdout)["failed"] == 3, p.stdout + p.stderr
    rc, out = pytest_run(root, f"--affidavit-replay={token.group(1)}", "test_rare_flake.py::test_uses_fresh_token")
    assert rc == 1 and "1 failed" in out, out


def test_systematic_exploration_finds_what_the_portfolio_misses(tmp_path: Path) -> None:
    """--affidavit-explore=systematic: every schedule with at most 2 delays, within its own run bound;
    the two-window example (missed by the random portfolio for 9 of 10 seeds in 1000 runs) turns red
    with a replayable token."""
    root = project(tmp_path, ["test_two_windows.py"])
    rc, out = pytest_run(root, "--affidavit-explore=systematic", "-q")
    assert rc == 1, out
    assert "passed on its own, but fails under a controlled schedule" in out and "zero + 2 delays" in out, out
    token = re.search(r"token:  (afd1:[a-z0-9]+)", out)
    assert token, out
    p = subprocess.run([AFFIDAVIT, "replay", token.group(1),
                        "test_two_windows.py::test_client_gets_a_consistent_record", "-n", "2", "--json"],
                       cwd=root, capture_output=True, text=True)
    assert json.loads(p.stdout)["failed"] == 2, p.stdout + p.stderr
    # the same through the strategy setting, and a shard refused: the enumeration is one ordered search
    rc, out = pytest_run(root, "-q", "-o", "affidavit_strategy=systematic", "--affidavit-explore=2000",
                         "--affidavit-shard=1/2")
    assert rc != 0 and "systematic" in out and "one ordered enumeration" in out, out


def test_shards_explore_disjoint_schedules(tmp_path: Path) -> None:
    root = project(tmp_path, ["test_rare_flake.py"])
    seen = []
    for shard in ("1/2", "2/2"):
        pytest_run(root, "--affidavit-explore=40", f"--affidavit-shard={shard}", "-q")
        path = root / ".affidavit" / "explore" / f"shard-{shard.replace('/', '-of-')}.jsonl"
        rows = [json.loads(l) for l in path.read_text().splitlines()]
        assert rows and all(r["shard"] == shard for r in rows)
        seen.append({i for r in rows for i in r["schedules"]})
    assert seen[0] and seen[1] and not seen[0] & seen[1], seen
    assert min(seen[0]) == 0 and min(seen[1]) == 1
    # the CI jobs' results folded into one store
    shards = sorted((root / ".affidavit" / "explore").glob("shard-*.jsonl"))
    ci = tmp_path / "ci"
    ci.mkdir()
    p = subprocess.run([AFFIDAVIT, "merge", *map(str, shards), "--json"], cwd=ci, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    merged = json.loads(p.stdout)
    assert merged["merged"] == 2 and merged["files"] == 2
    p = subprocess.run([AFFIDAVIT, "ls", "--json"], cwd=ci, capture_output=True, text=True)
    rows = json.loads(p.stdout)
    assert {r["incident"] for r in rows} == set(merged["incidents"])
    assert all(r["nodeid"] == "test_rare_flake.py::test_uses_fresh_token" and r["verdict"].startswith("explored")
               for r in rows)
    # a file that is not results is refused, naming the line, and nothing of it is merged
    bad = ci / "bad.jsonl"
    bad.write_text('{"nodeid": "x::y", "found": false, "runs": 3, "shard": "1/1"}\nnot json\n')
    p = subprocess.run([AFFIDAVIT, "merge", str(bad)], cwd=ci, capture_output=True, text=True)
    assert p.returncode == 2 and "bad.jsonl, line 2" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    p = subprocess.run([AFFIDAVIT, "ls", "--json"], cwd=ci, capture_output=True, text=True)
    assert len(json.loads(p.stdout)) == 2


def test_the_replay_mark_fails_on_the_bug_and_passes_on_the_fix(tmp_path: Path) -> None:
    root = project(tmp_path, [])
    (root / "test_always_loses.py").write_text(ALWAYS_LOSES)
    p = subprocess.run([AFFIDAVIT, "investigate", "test_always_loses.py::test_deposits_add_up", "--json", "--fix"],
                       cwd=root, capture_output=True, text=True, timeout=300)
    data = json.loads(p.stdout)
    token = data["token"]
    marked = ALWAYS_LOSES.replace("@pytest.mark.asyncio\n", f'@pytest.mark.affidavit_replay("{token}")\n')
    (root / "test_always_loses.py").write_text(marked)
    rc, out = pytest_run(root, "-q")
    assert rc == 1 and "1 failed" in out and re.search(r"assert [12] == 3", out), out
    # the fix affidavit proposed, applied by hand here: the same schedule now passes
    fixed = marked.replace('''    current = BALANCE["amount"]
    await asyncio.sleep(0)  # every deposit yields between its read and its write
    BALANCE["amount"] = current + n''', '''    async with LOCK:
        current = BALANCE["amount"]
        await asyncio.sleep(0)  # every deposit yields between its read and its write
        BALANCE["amount"] = current + n''').replace('BALANCE = {"amount": 0}', 'BALANCE = {"amount": 0}\nLOCK = asyncio.Lock()')
    (root / "test_always_loses.py").write_text(fixed)
    rc, out = pytest_run(root, "-q")
    assert rc == 0 and "1 passed" in out, out
    # a mark on a sync test, or without a token, is a usage error, said in one line
    (root / "test_always_loses.py").write_text(
        "import pytest\n\n@pytest.mark.affidavit_replay('afd1:x')\ndef test_sync() -> None:\n    pass\n")
    rc, out = pytest_run(root, "-q")
    assert rc == 4 and "affidavit_replay marks async tests only" in out, out


def test_the_report_dir_setting_moves_the_store_and_reports(tmp_path: Path) -> None:
    root = project(tmp_path, [], extra='\n[tool.affidavit]\nreport_dir = "build/affidavit"\n')
    (root / "test_always_loses.py").write_text(ALWAYS_LOSES)
    rc, out = pytest_run(root, "--affidavit", "-q")
    assert rc == 1, out
    report = re.search(r"report:   (\S+\.html)", out)
    assert report and report.group(1).startswith(str(root / "build" / "affidavit" / "reports")), out
    assert (root / "build" / "affidavit" / "incidents.db").exists() and not (root / ".affidavit").exists()


def test_settings_from_pyproject_and_the_command_line(tmp_path: Path) -> None:
    root = project(tmp_path, ["test_rare_flake.py"], extra="\n[tool.affidavit]\nexplore = 30\nbudget = 45\n")
    rc, out = pytest_run(root, "-q")
    rows = (root / ".affidavit" / "explore" / "shard-1-of-1.jsonl").read_text().splitlines()
    assert json.loads(rows[-1])["runs"] <= 30
    # -o beats pyproject, the command line beats -o
    rc, out = pytest_run(root, "-q", "-o", "affidavit_explore=5")
    assert json.loads((root / ".affidavit" / "explore" / "shard-1-of-1.jsonl").read_text().splitlines()[-1])["runs"] <= 5
    rc, out = pytest_run(root, "-q", "-o", "affidavit_explore=5", "--affidavit-explore=7")
    last = json.loads((root / ".affidavit" / "explore" / "shard-1-of-1.jsonl").read_text().splitlines()[-1])
    assert last["runs"] == 7 or (last["found"] and last["runs"] <= 7)
    rc, out = pytest_run(root, "-q", "--affidavit-shard=3/2")
    assert rc == 4 and "K/N" in out


def test_a_suite_without_async_tests_is_unchanged(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "test_plain.py").write_text(SYNC_ONLY)
    rc_on, out_on = pytest_run(root, "-q", "--affidavit-explore=50")
    rc_off, out_off = pytest_run(root, "-q", "-p", "no:affidavit")
    tally = re.compile(r"(\d+ failed, \d+ passed)")
    assert rc_on == rc_off == 1
    assert tally.search(out_on).group(1) == tally.search(out_off).group(1) == "1 failed, 2 passed"
    assert not (root / ".affidavit").exists()


FLAVOURS = {
    "auto": ('asyncio_mode = "auto"\n', ALWAYS_LOSES.replace("@pytest.mark.asyncio\n", "")),
    "anyio": ("", ALWAYS_LOSES.replace("@pytest.mark.asyncio\n", "@pytest.mark.anyio\n")
              + '\n\n@pytest.fixture\ndef anyio_backend() -> str:\n    return "asyncio"\n'),
    "asyncio_run": ("", ALWAYS_LOSES.replace("@pytest.mark.asyncio\nasync def test_deposits_add_up() -> None:\n"
                                             "    BALANCE[\"amount\"] = 0\n    await asyncio.gather(deposit(1), deposit(2))\n",
                                             "def test_deposits_add_up() -> None:\n    BALANCE[\"amount\"] = 0\n\n"
                                             "    async def both() -> None:\n"
                                             "        await asyncio.gather(deposit(1), deposit(2))\n\n"
                                             "    asyncio.run(both())\n")),
}


def test_every_flavour_of_async_test_is_investigated(tmp_path: Path) -> None:
    for name, (ini, source) in FLAVOURS.items():
        root = tmp_path / name
        root.mkdir()
        (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\nasyncio_default_fixture_loop_scope = "
                                             "\"function\"\n" + ini)
        (root / "test_flavour.py").write_text(source)
        rc, out = pytest_run(root, "--affidavit", "-q")
        assert rc == 1 and "1 failed" in out, (name, out)
        summary = out[out.index("= affidavit ="):]
        assert "cause:    lost update on test_flavour.BALANCE[\"amount\"]" in summary, (name, summary)
