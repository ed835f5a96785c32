"""The incident model: every golden document reads into the C struct and writes back the same.

The golden documents are `affidavit investigate NODEID --json --workers 2` for the eleven
examples, captured before the incident model existed; they live in tests/data/golden (or the
directory AFFIDAVIT_GOLDEN names). tests/c/incident_roundtrip (afd_incident_from_json, then
afd_incident_to_json) is what reads them, so these tests reach the C reader and writer that the
engine, the store and the reports share. Bad documents are refused with one line naming the key.
"""
import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import jsonschema
import pytest

from helpers import C_BUILD, REPO
ROUNDTRIP = C_BUILD / "incident_roundtrip"
SCHEMA = json.loads((REPO / "docs" / "schema" / "incident.schema.json").read_text())
GOLDEN = Path(os.environ.get("AFFIDAVIT_GOLDEN", REPO / "tests" / "data" / "golden"))
EXAMPLES = sorted(p.stem for p in (REPO / "examples").glob("test_*.py"))


def golden_paths() -> List[Path]:
    return sorted(GOLDEN.glob("*.json"))


def round_trip(doc: Any) -> subprocess.CompletedProcess:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    return subprocess.run([str(ROUNDTRIP)], input=text.encode(), capture_output=True, timeout=30)


def test_every_example_has_a_golden_document() -> None:
    names = {p.name.split("__")[0] for p in golden_paths()}
    assert names == set(EXAMPLES), f"golden documents in {GOLDEN}: {sorted(names)}; examples: {EXAMPLES}"


@pytest.mark.parametrize("path", golden_paths(), ids=lambda p: p.stem)
def test_golden_document_round_trips(path: Path) -> None:
    before = json.loads(path.read_text())
    p = round_trip(path.read_text())
    assert p.returncode == 0, p.stderr.decode()
    after = json.loads(p.stdout)
    assert after.pop("schema") == 1
    if before.get("cause") and "await_chain" not in before["cause"]:
        # captured before causes had await chains: read as none, written back as none
        assert after["cause"].pop("await_chain") == [], after["cause"]
    assert after == before
    assert list(after) == list(before)  # the keys in the order the engine always wrote them
    jsonschema.validate(json.loads(p.stdout), SCHEMA)


def small() -> Dict[str, Any]:
    """The smallest document the reader accepts (no --fix, nothing found)."""
    return {"schema": 1, "nodeid": "t.py::t", "verdict": "no_failure", "timing": None,
            "natural": {"runs": 5, "failed": 0, "ci95": [0, 0.434482]}, "token": None,
            "replay": {"runs": 0, "failed": 0, "identical_traces": None}, "passing_token": None,
            "passing_replay": {"runs": 0, "passed": 0}, "window_us": None, "window": None, "cause": None,
            "evidence": [], "races": [], "failure": "a\x00b",
            "environment": {"python": "CPython 3.11.7", "hash_seed": "0", "platform": "Linux"},
            "step_limit_runs": 0, "truncated_traces": 0, "runs": 5, "seconds": 0.25}


def test_small_document_round_trips_and_keeps_a_nul() -> None:
    p = round_trip(small())
    assert p.returncode == 0, p.stderr.decode()
    assert json.loads(p.stdout) == small()
    jsonschema.validate(json.loads(p.stdout), SCHEMA)


@pytest.mark.parametrize("key", [k for k in small() if k != "schema"])
def test_a_missing_key_is_refused_naming_it(key: str) -> None:
    doc = small()
    del doc[key]
    p = round_trip(doc)
    assert p.returncode == 1 and p.stdout == b""
    assert p.stderr.decode() == f"{key}: missing\n"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)


BAD_TYPES = [
    ("nodeid", 7, "nodeid: not a string"),
    ("verdict", "flaky", 'verdict: unknown: "flaky"'),
    ("natural", [], "natural: not an object"),
    ("token", 1, "token: not a string or null"),
    ("replay", {"runs": 1, "failed": 0, "identical_traces": "yes"}, "replay.identical_traces: not a boolean or null"),
    ("window", "no", "window: not an object or null"),
    ("cause", {"kind": "flaky", "resource": "", "await_site": None, "summary": "", "operations": []},
     'cause.kind: unknown: "flaky"'),
    ("evidence", [{"claim": "c", "measured": 1, "strength": "s"}], "evidence.measured: not a string"),
    ("races", {}, "races: not an array"),
    ("failure", None, "failure: not a string"),
    ("runs", -1, "runs: out of range"),
    ("seconds", "0.25", "seconds: not a number"),
    ("schema", 2, "schema: version 2 is not 1"),
]


@pytest.mark.parametrize("key,value,reason", BAD_TYPES, ids=[b[0] for b in BAD_TYPES])
def test_a_wrongly_typed_key_is_refused_naming_it(key: str, value: Any, reason: str) -> None:
    doc = small()
    doc[key] = value
    p = round_trip(doc)
    assert p.returncode == 1 and p.stdout == b""
    assert p.stderr.decode() == reason + "\n"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)


def test_text_that_is_not_json_is_refused_in_one_line() -> None:
    p = round_trip('{"nodeid": ')
    assert p.returncode == 1 and p.stderr.decode().startswith("not JSON: ") and p.stderr.count(b"\n") == 1


def test_a_fix_with_every_part_round_trips() -> None:
    doc = small()
    doc["verdict"] = "reproduced"
    doc["fix"] = {"kind": "LOCK", "why_none": None, "diff": "--- a/t.py\n+++ b/t.py\n",
                  "gate": [{"check": "parses", "group": "syntax", "passed": True, "reason": "ok"}],
                  "tiers": {"replay": {"token_failed_before": "10/10", "runs": 10, "passed": 10},
                            "exploration": {"schedules": 100, "failed_before": 40, "failed_after": 0},
                            "natural": {"runs": 200, "failed": 0, "rate_below": 0.015},
                            "overhead": {"median_ms_before": 1.25, "median_ms_after": 1.5}},
                  "regression_test": {"node": "t.py::test_r", "fails_before": True, "passes_after": "not attempted"},
                  "candidates": [{"kind": "LOCK", "changed_lines": 4, "tried": True, "gate_passed": True,
                                  "verified": True}],
                  "verified": True, "applied": False, "apply": None}
    none = copy.deepcopy(doc)
    none["fix"].update(kind=None, why_none="no lock to add", diff="", gate=[], candidates=[], verified=False,
                       regression_test="no regression test: nothing proposed",
                       tiers={k: "not attempted" for k in ("replay", "exploration", "natural", "overhead")})
    for d in (doc, none):
        p = round_trip(d)
        assert p.returncode == 0, p.stderr.decode()
        assert json.loads(p.stdout) == d
        jsonschema.validate(d, SCHEMA)


AFFIDAVIT = Path(sys.executable).parent / "affidavit"


def test_merge_reads_an_investigation_back_and_refuses_a_broken_one(tmp_path: Path) -> None:
    """merge interprets an investigation's document through the C reader: a good one is stored
    under its verdict, one with a missing key is refused naming the key, and nothing is merged."""
    env = {**os.environ, "AFFIDAVIT_DIR": str(tmp_path / "store")}
    good = small()
    good.update(verdict="reproduced", token="afd1:x")
    good["cause"] = {"kind": "lost_update", "resource": "A.n", "await_site": None, "summary": "lost update on A.n",
                     "operations": []}
    (tmp_path / "good.jsonl").write_text(json.dumps(good) + "\n")
    p = subprocess.run([str(AFFIDAVIT), "merge", "good.jsonl"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and "1 investigation" in p.stdout, p.stderr
    rows = json.loads(subprocess.run([str(AFFIDAVIT), "ls", "--json"], cwd=tmp_path, env=env, capture_output=True,
                                     text=True, timeout=60).stdout)
    assert [(r["verdict"], r["cause"]) for r in rows] == [("reproduced", "lost_update")], rows
    bad = copy.deepcopy(good)
    del bad["natural"]
    (tmp_path / "bad.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    p = subprocess.run([str(AFFIDAVIT), "merge", "bad.jsonl"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert p.stderr == "affidavit: error: bad.jsonl, line 2: not a result of affidavit (natural: missing)\n"
    rows = json.loads(subprocess.run([str(AFFIDAVIT), "ls", "--json"], cwd=tmp_path, env=env, capture_output=True,
                                     text=True, timeout=60).stdout)
    assert len(rows) == 1, rows


def test_the_plugin_words_each_verdict_from_the_generated_table() -> None:
    """The plugin's words come from incident.h's AFD_VERDICTS (affidavit/_verdicts.py is generated
    from it at build time), one entry for every verdict the document can hold."""
    from affidavit import _verdicts, pytest_plugin

    assert set(_verdicts.WORDS) == set(SCHEMA["properties"]["verdict"]["enum"])
    for verdict, words in _verdicts.WORDS.items():
        lines = pytest_plugin._block(pytest_plugin.Finding("t.py::t", {**small(), "verdict": verdict}))
        assert lines[0] == f"verdict:  {words}", lines
