"""The investigation's own measures: its eight stages in the documents, --trace-out, the progress line.

`investigate` runs sample -> search -> reproduce -> minimize -> explain -> repair -> verify -> report;
each stage is timed and its runs counted. The text output ends with one line per stage, --json has a
"stages" list of all eight in order, --trace-out writes the stages, the batches of runs and the
verification tiers as Chrome trace JSON (what Perfetto opens), and on a terminal the progress line
names the running stage. Each call is a subprocess from the repository root with a timeout.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[1]
AFFIDAVIT = Path(sys.executable).parent / "affidavit"
NODE = "examples/test_lost_update.py::test_concurrent_deposits"
STAGES = ["sample", "search", "reproduce", "minimize", "explain", "repair", "verify", "report"]
# the top-level keys of the investigate document before the stages were measured (and "search", issue 21)
KEYS = ["incident", "report", "schema", "nodeid", "verdict", "timing", "natural", "search", "token", "replay",
        "passing_token",
        "passing_replay", "window_us", "window", "cause", "evidence", "races", "failure", "environment",
        "step_limit_runs", "truncated_traces", "runs", "seconds"]
LINE = re.compile(r"^  \[(\d)/8\] (\w+) \.\.\. (?:(\d+\.\d\d) s \((\d+) runs?\)|skipped)$")


def run(*args: str, timeout: float = 300, store: Path) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, AFFIDAVIT_DIR=str(store))
    return subprocess.run([str(AFFIDAVIT), "investigate", NODE, "--workers", "2", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, env=env)


def investigate_json(tmp_path: Path, *args: str) -> Dict[str, Any]:
    proc = run("--json", *args, store=tmp_path / "store")
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    data: Dict[str, Any] = json.loads(proc.stdout)
    assert data["verdict"] == "reproduced", data
    return data


def check_stages(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    stages = data["stages"]
    assert [s["name"] for s in stages] == STAGES, stages
    for s in stages:
        assert sorted(s) == ["name", "runs", "seconds"], s
        assert isinstance(s["seconds"], (int, float)) and s["seconds"] >= 0, s
        assert isinstance(s["runs"], int) and s["runs"] >= 0, s
    return stages


def test_json_lists_the_eight_stages_whose_runs_add_up(tmp_path: Path) -> None:
    data = investigate_json(tmp_path)
    stages = check_stages(data)
    by = {s["name"]: s for s in stages}
    assert sum(s["runs"] for s in stages) == data["runs"], (stages, data["runs"])
    assert by["sample"]["runs"] == data["natural"]["runs"] == 50, stages
    assert by["search"]["runs"] >= 1 and by["reproduce"]["runs"] == data["replay"]["runs"] == 10, stages
    assert by["minimize"]["runs"] >= 1 and by["explain"]["runs"] >= 10, stages
    assert by["sample"]["seconds"] > 0 and by["minimize"]["seconds"] > 0, stages
    # without --fix, repair and verify do not run
    assert by["repair"] == {"name": "repair", "seconds": 0, "runs": 0}, stages
    assert by["verify"] == {"name": "verify", "seconds": 0, "runs": 0}, stages
    assert by["report"]["runs"] == 0, stages
    # besides the layout's version ("schema"), "stages" is the only key the document gained
    assert list(data) == KEYS + ["stages"], list(data)


def test_text_output_ends_with_one_line_per_stage(tmp_path: Path) -> None:
    proc = run("--natural", "20", store=tmp_path / "store")
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stdout.splitlines()
    if lines and lines[-1].startswith("  incident: "):
        lines = lines[:-1]  # the incident the investigation was stored as follows its document
    tail = lines[-8:]
    assert len(tail) == 8 and lines[-9].startswith("  (") and lines[-9].endswith(" s)"), proc.stdout
    matches = [LINE.match(line) for line in tail]
    assert all(matches), tail
    assert [(int(m.group(1)), m.group(2)) for m in matches if m] == list(enumerate(STAGES, 1)), tail
    ran = {m.group(2): m.group(3) is not None for m in matches if m}
    assert ran == {s: s not in ("repair", "verify") for s in STAGES}, tail
    sample = next(m for m in matches if m and m.group(2) == "sample")
    assert sample.group(4) == "20", tail


def spans_of(path: Path) -> List[Dict[str, Any]]:
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    assert isinstance(events, list) and events, trace
    for e in events:
        assert e["ph"] == "X", e
        assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert isinstance(e["name"], str) and isinstance(e["args"], dict), e
    return events


def inside(e: Dict[str, Any], outer: Dict[str, Any]) -> bool:
    eps = 0.002  # microseconds are written with three decimals
    return outer["ts"] - eps <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + eps


def stage_spans(events: List[Dict[str, Any]], data: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    stage = [e for e in events if e["cat"] == "stage"]
    ran = [s["name"] for s in data["stages"] if s["name"] in ("sample", "report") or s["runs"] or s["seconds"]]
    assert [e["name"] for e in stage] == ran, ([e["name"] for e in stage], data["stages"])
    by = {e["name"]: e for e in stage}
    for s in data["stages"]:
        if s["name"] in by:
            assert by[s["name"]]["args"]["runs"] == s["runs"], (by[s["name"]], s)
    return by


def test_trace_out_writes_one_span_per_stage_with_batches_inside(tmp_path: Path) -> None:
    out = tmp_path / "pipeline.json"
    data = investigate_json(tmp_path, "--trace-out", str(out))
    check_stages(data)
    events = spans_of(out)
    by = stage_spans(events, data)
    assert list(by) == [s for s in STAGES if s not in ("repair", "verify")], list(by)
    batches = [e for e in events if e["name"] == "batch"]
    assert batches, events
    for b in batches:
        owners = [name for name, s in by.items() if inside(b, s)]
        assert len(owners) == 1, (b, by)
    # the natural runs are one batch of the sample stage; every run is in a batch
    assert [b["args"]["runs"] for b in batches if inside(b, by["sample"])] == [50], batches
    assert sum(b["args"]["runs"] for b in batches) == data["runs"], (batches, data["runs"])
    assert not list(tmp_path.glob("pipeline.json.tmp-*")), list(tmp_path.iterdir())


def test_trace_out_holds_the_verification_tiers(tmp_path: Path) -> None:
    out = tmp_path / "fix.json"
    # the spans are the subject, not verification's strength: 20 exploration schedules a side
    data = investigate_json(tmp_path, "--fix", "--verify-runs", "20", "--trace-out", str(out))
    stages = {s["name"]: s for s in check_stages(data)}
    assert stages["repair"]["seconds"] > 0 and stages["verify"]["runs"] > 0, stages
    events = spans_of(out)
    by = stage_spans(events, data)
    tiers = [e for e in events if e["cat"] == "verify"]
    names = [e["name"] for e in tiers]
    assert {"verify: replay", "verify: explore", "verify: natural"} <= set(names), names
    # each tier's span counts what it ran: --verify-runs 20 before and after the fix, the
    # systematic tier at most 40 a side
    explore = [t["args"]["runs"] for t in tiers if t["name"] == "verify: explore"]
    systematic = [t["args"]["runs"] for t in tiers if t["name"] == "verify: systematic"]
    assert explore == [40] * len(explore) and explore, tiers
    assert systematic and all(0 < n <= 80 for n in systematic), tiers
    for t in tiers:
        assert inside(t, by["verify"]), (t, by["verify"])
    # the verification's runs are the tiers', beside the incident's runs
    assert sum(t["args"]["runs"] for t in tiers) == stages["verify"]["runs"], (tiers, stages["verify"])
    assert sum(s["runs"] for s in stages.values()) == data["runs"] + stages["verify"]["runs"], stages
    for b in (e for e in events if e["name"] == "batch" and inside(e, by["verify"])):
        assert any(inside(b, t) for t in tiers), (b, tiers)


@pytest.mark.parametrize("where", ["missing-dir/trace.json", "."])
def test_an_unwritable_trace_out_is_one_line_before_any_run(tmp_path: Path, where: str) -> None:
    target = tmp_path / where
    proc = run("--json", "--trace-out", str(target), store=tmp_path / "store", timeout=30)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == "", proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("affidavit: error: cannot write the trace to "), proc.stderr
    assert str(target) in lines[0], lines
    assert not (tmp_path / "store").exists(), list(tmp_path.iterdir())  # nothing ran, nothing stored


def test_trace_out_needs_a_file() -> None:
    proc = subprocess.run([str(AFFIDAVIT), "investigate", NODE, "--trace-out"], cwd=REPO, capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 2, proc
    assert proc.stderr.startswith("affidavit: error: expected a file after: --trace-out"), proc.stderr


def test_progress_on_a_terminal_names_the_stage(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    env = dict(os.environ, AFFIDAVIT_DIR=str(tmp_path / "store"))
    try:
        proc = subprocess.Popen([str(AFFIDAVIT), "investigate", NODE, "--workers", "2", "--json", "--natural", "10"],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=slave, env=env)
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the engine, the only writer, has exited
                break
            if not chunk:
                break
            seen += chunk
        assert proc.stdout is not None
        out = proc.stdout.read()
        assert proc.wait(timeout=300) == 1, seen
    finally:
        os.close(master)
    text = seen.decode("utf-8", "replace")
    shown = re.findall(r"investigate \[(\d)/8 (\w+)\]: \d+(?:/\d+)? runs, \d+ failed", text)
    assert ("1", "sample") in shown and ("4", "minimize") in shown, text[-2000:]
    assert [n for n, _ in shown] == sorted(n for n, _ in shown), shown  # in stage order
    assert json.loads(out)["verdict"] == "reproduced"


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    proc = run("--json", "--natural", "10", store=tmp_path / "store")
    assert proc.returncode == 1, proc.stderr
    assert "investigate [" not in proc.stderr and "\r" not in proc.stderr, proc.stderr
