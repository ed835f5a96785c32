"""The user's files and the user's shell: replay says when a token is not this test's, every printed
command survives being pasted, and --apply never loses what the user or the test wrote.

Each test works in its own tmp_path with a copy of its input (examples/ or tests/cases/): the
engine runs there (its store goes to tmp_path/.affidavit), pasted commands run there with the
engine first on PATH, and the file --apply writes is that copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from helpers import AFFIDAVIT, CASES, REPO, WORKERS, Proc, describe, engine, engine_env, one_json
from test_cli import EXAMPLES, LOST_UPDATE, RARE_FLAKE

from affidavit import _runtime

TMP_SUFFIX = ".affidavit-tmp"


def engine_in(cwd: Path, *args: str, timeout: float = 300) -> Proc:
    """affidavit with args (plus --workers 2) in cwd."""
    return engine(*args, cwd=cwd, timeout=timeout)


# ---- replay means what it says ----

# The rare flake's minimal cause, as investigate finds it: its test task's first step delayed 10 ms.
RARE_TASK = "test_uses_fresh_token#0"


def token(*delays: Tuple[str, int]) -> str:
    return _runtime.token_encode("zero", 0, delays=[(label, step, 10_000_000) for label, step in delays])


def test_replay_of_a_token_on_its_own_test_is_unchanged() -> None:
    proc = engine_in(REPO, "replay", token((RARE_TASK, 0)), RARE_FLAKE, "-n", "3", "--json")
    assert proc.returncode == 1, describe(proc)
    data = one_json(proc)
    assert data["verdict"] == "reproduced" and data["failed"] == 3, data
    assert data["delays"] == 1 and data["delays_never_ran"] == [], data


def test_replay_of_another_tests_token_is_stale() -> None:
    tok = token((RARE_TASK, 0))
    proc = engine_in(REPO, "replay", tok, LOST_UPDATE, "-n", "3")
    assert proc.returncode == 5, describe(proc)
    assert f"  stale: delay on {RARE_TASK} step 0 never ran: this schedule is not from this test" in proc.stdout, \
        describe(proc)
    assert "stale schedule: 1 of its 1 delays never ran" in proc.stderr, describe(proc)
    proc = engine_in(REPO, "replay", tok, LOST_UPDATE, "-n", "3", "--json")
    assert proc.returncode == 5, describe(proc)
    data = one_json(proc)
    assert data["verdict"] == "stale" and data["runs"] == 3, data
    assert data["delays_never_ran"] == [{"task": RARE_TASK, "step": 0}], data


def test_replay_after_a_refactor_names_the_step_that_never_ran() -> None:
    # the test's task takes a handful of steps: a delay on its 50th is what a token from a longer
    # version of the code would hold, next to one that still applies
    proc = engine_in(REPO, "replay", token((RARE_TASK, 0), (RARE_TASK, 50)), RARE_FLAKE, "-n", "2", "--json")
    assert proc.returncode == 5, describe(proc)
    data = one_json(proc)
    assert data["verdict"] == "stale" and data["failed"] == 2, data  # the runs are still counted
    assert data["delays"] == 2 and data["delays_never_ran"] == [{"task": RARE_TASK, "step": 50}], data


def test_a_token_without_delays_is_never_stale() -> None:
    proc = engine_in(REPO, "replay", token(), PASS_NODE, "-n", "2", "--json")
    assert proc.returncode == 0, describe(proc)
    data = one_json(proc)
    assert data["verdict"] == "no_failure" and data["delays"] == 0 and data["delays_never_ran"] == [], data


PASS_NODE = f"{CASES}/case_pass.py::test_always_passes"


# ---- printed commands are quoted for a shell ----

SHELL_IDS = ["$(touch PWNED)", "a b", "it's"]


def paste(line: str, cwd: Path) -> Proc:
    """Runs the command of a printed `replay:` line in bash, as a user pasting it would."""
    command = line[line.index("affidavit replay"):]
    env = engine_env()
    env["PATH"] = f"{AFFIDAVIT.parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(["bash", "-c", f"{command} -n 2 --workers 2"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def replay_lines(out: str) -> List[str]:
    return [line for line in out.splitlines() if "affidavit replay" in line]


def check_pasted(line: str, work: Path, nodeid: str, value: str) -> None:
    proc = paste(line, work)
    assert not (work / "PWNED").exists(), f"the pasted command ran code: {line!r}\n{describe(proc)}"
    assert proc.returncode == 1, f"{line!r}\n{describe(proc)}"
    assert proc.stdout.startswith(f"{nodeid}: replayed "), describe(proc)
    assert f"lost an update in case {value!r}" in proc.stdout, describe(proc)


@pytest.mark.parametrize("value", SHELL_IDS)
def test_explores_replay_line_pastes_into_a_shell(tmp_path: Path, value: str) -> None:
    shutil.copy(REPO / CASES / "case_shell_ids.py", tmp_path / "test_ids.py")
    nodeid = f"test_ids.py::test_deposits[{value}]"
    proc = engine_in(tmp_path, "explore", nodeid)
    assert proc.returncode == 1, describe(proc)
    lines = replay_lines(proc.stdout)
    assert len(lines) == 1, describe(proc)
    check_pasted(lines[0], tmp_path, nodeid, value)


def test_investigate_and_show_print_commands_that_paste(tmp_path: Path) -> None:
    shutil.copy(REPO / CASES / "case_shell_ids.py", tmp_path / "test_ids.py")
    for n, value in enumerate(SHELL_IDS, 1):
        nodeid = f"test_ids.py::test_deposits[{value}]"
        proc = engine_in(tmp_path, "investigate", nodeid, "--natural", "10")
        assert proc.returncode == 1, describe(proc)
        lines = replay_lines(proc.stdout)
        assert len(lines) == 1, describe(proc)
        check_pasted(lines[0], tmp_path, nodeid, value)
        show = subprocess.run([str(AFFIDAVIT), "show", str(n)], cwd=tmp_path, env=engine_env(), capture_output=True,
                              text=True, timeout=60)
        assert show.returncode == 0 and f"  test:     {nodeid}\n" in show.stdout, describe(show)
        lines = replay_lines(show.stdout)
        assert len(lines) == 1, describe(show)
        check_pasted(lines[0], tmp_path, nodeid, value)


# ---- --apply and the user's files ----

LOST = REPO / EXAMPLES[0].split("::")[0]
TEST = "test_concurrent_deposits"


# What these tests check is what --apply does with the file, not how strong verification is
# (test_investigate's): the LOCK fix of the lost update is verified on 20 exploration schedules a
# side and a systematic bound of 40 instead of 200 and 400.
VERIFY = ("--natural", "20", "--verify-runs", "20")


def apply(cwd: Path, file: str) -> Dict[str, Any]:
    """investigate --fix --apply on file's lost update in cwd: the fix section of its JSON."""
    proc = engine_in(cwd, "investigate", f"{file}::{TEST}", "--fix", "--apply", *VERIFY, "--json")
    assert proc.returncode == 1, describe(proc)
    data = one_json(proc)
    assert data["verdict"] == "reproduced", data
    return data["fix"]


def leftovers(d: Path) -> List[str]:
    return sorted(p.name for p in d.iterdir() if p.name.endswith((".orig", TMP_SUFFIX)))


def test_apply_writes_a_fix_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "test_lu.py"
    shutil.copy(LOST, target)
    target.chmod(0o640)
    original = target.read_bytes()
    fix = apply(tmp_path, "test_lu.py")
    assert fix["verified"] is True and fix["applied"] is True, fix
    tiers = fix["tiers"]  # --verify-runs 20: the counts that ran are the ones asked for
    assert tiers["exploration"]["schedules"] == 20 and tiers["exploration"]["failed_before"] > 0, tiers
    assert 0 < tiers["systematic"]["before"]["runs"] <= 40 and tiers["systematic"]["after"]["runs"] <= 40, tiers
    assert fix["apply"] == "applied to test_lu.py (the original is in test_lu.py.orig)", fix
    assert (tmp_path / "test_lu.py.orig").read_bytes() == original
    assert "async with " in target.read_text() and target.read_bytes() != original
    assert target.stat().st_mode & 0o7777 == 0o640 and (tmp_path / "test_lu.py.orig").stat().st_mode & 0o7777 == 0o640
    assert leftovers(tmp_path) == ["test_lu.py.orig"]


APPENDS = '''

import pathlib as _pathlib


def _note_run() -> None:
    """What a user saving the file meanwhile does: this file changes while it is investigated."""
    with open(_pathlib.Path(__file__), "a") as f:
        f.write("# ran\\n")
'''


def test_apply_refuses_a_file_that_changed_while_investigated(tmp_path: Path) -> None:
    text = LOST.read_text()
    call = f"async def {TEST}() -> None:\n"
    assert call in text
    text = text.replace(call, call + "    _note_run()\n") + APPENDS
    target = tmp_path / "test_lu.py"
    target.write_text(text)
    fix = apply(tmp_path, "test_lu.py")
    assert fix["verified"] is True and fix["applied"] is False, fix
    assert fix["apply"].startswith("not applied: test_lu.py changed since it was analysed"), fix
    # every byte the test wrote is still there, and nothing of affidavit's
    now = target.read_text()
    assert now.startswith(text) and set(now[len(text):].splitlines()) == {"# ran"}, now[len(text) - 200:]
    assert now.count("# ran") >= 20, now.count("# ran")  # at least the natural runs appended
    assert leftovers(tmp_path) == []


def test_apply_cleans_what_a_killed_apply_left(tmp_path: Path) -> None:
    # what SIGKILL in the old write window left: the whole backup and an empty temporary file
    target = tmp_path / "test_lu.py"
    shutil.copy(LOST, target)
    original = target.read_bytes()
    (tmp_path / "test_lu.py.orig").write_bytes(original)
    (tmp_path / f"test_lu.py{TMP_SUFFIX}").write_bytes(b"")
    (tmp_path / f"test_lu.py.orig{TMP_SUFFIX}").write_bytes(original[:100])
    fix = apply(tmp_path, "test_lu.py")
    assert fix["applied"] is True, fix
    assert "removed a temporary file a killed --apply left" in fix["apply"], fix
    assert "async with " in target.read_text()
    assert (tmp_path / "test_lu.py.orig").read_bytes() == original
    assert leftovers(tmp_path) == ["test_lu.py.orig"]


@pytest.mark.parametrize("same", [False, True], ids=["other bytes", "the file's bytes"])
def test_a_backup_of_a_completed_apply_still_blocks(tmp_path: Path, same: bool) -> None:
    # the file's bytes with no temporary file beside it: a user who restored the file from the
    # backup of an apply that completed, not what a killed apply leaves
    target = tmp_path / "test_lu.py"
    shutil.copy(LOST, target)
    original = target.read_bytes()
    kept = original if same else b"# the user's only copy of something\n"
    (tmp_path / "test_lu.py.orig").write_bytes(kept)
    fix = apply(tmp_path, "test_lu.py")
    assert fix["applied"] is False and "test_lu.py.orig exists (a backup is never overwritten)" in fix["apply"], fix
    assert target.read_bytes() == original
    assert (tmp_path / "test_lu.py.orig").read_bytes() == kept
    assert leftovers(tmp_path) == ["test_lu.py.orig"]


def chattr(flag: str, path: Path) -> None:
    # tests run as root, for whom no mode bit makes a file unwritable: the immutable attribute does
    proc = subprocess.run(["chattr", flag, str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, f"chattr {flag} {path} failed: {proc.stderr}"


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_failed_apply_leaves_nothing_behind(tmp_path: Path, what: str) -> None:
    target = tmp_path / "test_lu.py"
    shutil.copy(LOST, target)
    original = target.read_bytes()
    locked = target if what == "file" else tmp_path
    # the investigation writes its store and imports the test: only the file apply writes is locked,
    # from the start of the run (the store goes elsewhere when the directory is locked)
    env_dir = tmp_path.parent / f"{tmp_path.name}-store"
    chattr("+i", locked)
    try:
        proc = subprocess.run(
            [str(AFFIDAVIT), "investigate", f"test_lu.py::{TEST}", "--fix", "--apply", *VERIFY, "--json",
             *WORKERS], cwd=tmp_path, env={**engine_env(), "AFFIDAVIT_DIR": str(env_dir)}, capture_output=True, text=True,
            timeout=300, stdin=subprocess.DEVNULL)
    finally:
        chattr("-i", locked)
        shutil.rmtree(env_dir, ignore_errors=True)
    assert proc.returncode == 1, describe(proc)
    fix = one_json(proc)["fix"]
    assert fix["verified"] is True and fix["applied"] is False, fix
    assert fix["apply"].startswith("not applied: cannot "), fix
    assert target.read_bytes() == original
    assert leftovers(tmp_path) == [], fix


def test_a_read_only_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "test_lu.py"
    shutil.copy(LOST, target)
    target.chmod(0o444)
    original = target.read_bytes()
    fix = apply(tmp_path, "test_lu.py")
    assert fix["applied"] is False and "test_lu.py is read-only (mode 0444)" in fix["apply"], fix
    assert target.read_bytes() == original and leftovers(tmp_path) == []


def test_a_symlinked_test_file_is_written_through_the_link(tmp_path: Path) -> None:
    real_dir = tmp_path / "shared"
    real_dir.mkdir()
    real = real_dir / "test_lu.py"
    shutil.copy(LOST, real)
    original = real.read_bytes()
    link = tmp_path / "test_lu.py"
    link.symlink_to(Path("shared") / "test_lu.py")
    fix = apply(tmp_path, "test_lu.py")
    assert fix["applied"] is True, fix
    assert link.is_symlink() and os.readlink(link) == str(Path("shared") / "test_lu.py"), "the link was replaced"
    assert fix["apply"].startswith(f"applied to test_lu.py through its symlink, to {real.resolve()}"), fix
    assert "async with " in real.read_text()
    backup = tmp_path / "test_lu.py.orig"
    assert not backup.is_symlink() and backup.read_bytes() == original
    assert leftovers(tmp_path) == ["test_lu.py.orig"] and leftovers(real_dir) == []
