"""The investigate documents of the examples, as captured before the pipeline was reshaped (issue 19).

`tests/data/golden/<module>__<test>.json` (and `...__fix.json` for `--fix`) hold what
`affidavit investigate NODEID --json --workers 2 [--fix]` printed on the code before the
reshaping. `assert_matches_golden` compares a document printed now with that one, key by key and
value by value, except where a value depends on the machine's timing rather than on the code:

- `seconds`, the `stages` timings, the fix's wall-time medians: measured durations;
- `environment.platform`: the kernel of the machine that ran it (`uname`), which differs between
  machines of one kind (6.18.44-fc-v669 at the capture, -v1045 on a later one);
- `incident`, `report`: the incident's number and path in the store;
- `natural.failed`, `natural.ci95`: natural runs are uncontrolled, so their count of failures varies
  (which is what they measure);
- `runs`: the search dispatches runs to two workers and stops at the first failure in completion
  order, so how many runs were in flight when it stopped varies by one or two;
- evidence rows "slow step: ... (over --slow-step)": a step's wall time, which the machine's load
  decides (under a load of 14 on two cores a 112 ms step appeared in one capture of two);
- Ochiai evidence rows ("Ochiai 1.00 (52 failing, 0 passing runs)"): their counts are over every run
  seen, or every natural run, so they vary with the natural runs.

Two captures of the same code, a minute apart, differed in exactly these paths and no others.
Keys added since the capture (`schema`, `stages`, `search`, `fix.tiers.systematic`;
`cause.await_chain` when empty where a golden lacks it) are allowed, and so are the rows of gate checks added since (ADDED_CHECKS) when they
passed (a failing one is a difference); a key removed or a value changed anywhere else fails the
test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List

GOLDEN = Path(__file__).resolve().parent / "data" / "golden"

# Paths (dotted, list indices as [i]) whose values depend on timing, not on the code.
VOLATILE = re.compile(
    r"^\.(seconds|incident|report|runs|natural\.failed|natural\.ci95(\[\d+\])?"
    r"|fix\.tiers\.overhead\.median_ms_(before|after)|stages.*|environment\.platform)$"
)
# `search` and `fix.tiers.systematic` (issue 21): how the search went and the systematic tier, whose
# counts tests/test_systematic.py checks; the token, cause and fix they lead to are still compared.
ADDED = {".schema", ".stages", ".search", ".fix.tiers.systematic"}
ADDED_CHECKS = {"no_cancel_swallow", "no_shield", "no_uncancel"}
# Keys added since the capture that a golden holds only where its value had to change: where a
# golden lacks one, the document must hold it empty (an await chain named where none was before
# is a change the golden must show).
ADDED_EMPTY = {".cause.await_chain"}
OCHIAI = re.compile(r"^Ochiai [0-9.]+ \(\d+ failing, \d+ passing (natural )?runs\)$")


def golden_path(nodeid: str, fix: bool = False) -> Path:
    module, test = nodeid.split("::")
    return GOLDEN / f"{Path(module).stem}__{test}{'__fix' if fix else ''}.json"


def flatten(doc: Any, prefix: str = "") -> Dict[str, Any]:
    """Every leaf of doc by its path; empty containers are leaves too (so that [] vs [x] differs)."""
    out: Dict[str, Any] = {}
    if isinstance(doc, dict) and doc:
        for key, value in doc.items():
            out.update(flatten(value, f"{prefix}.{key}"))
    elif isinstance(doc, list) and doc:
        for i, value in enumerate(doc):
            out.update(flatten(value, f"{prefix}[{i}]"))
    else:
        out[prefix] = doc
    return out


def _masked(doc: Dict[str, Any]) -> Dict[str, Any]:
    doc = json.loads(json.dumps(doc))
    doc.pop("_stderr", None)
    fix = doc.get("fix")
    if isinstance(fix, dict) and isinstance(fix.get("gate"), list):
        fix["gate"] = [row for row in fix["gate"]
                       if not (isinstance(row, dict) and row.get("check") in ADDED_CHECKS and row.get("passed") is True)]
    doc["evidence"] = [row for row in doc.get("evidence") or []
                       if not (isinstance(row, dict) and str(row.get("claim", "")).startswith("slow step: "))]
    for row in doc["evidence"]:
        if isinstance(row, dict) and OCHIAI.match(str(row.get("measured", ""))):
            row["measured"] = "Ochiai (counted over the runs seen)"
    return {k: v for k, v in flatten(doc).items() if not VOLATILE.match(k)}


def differences(now: Dict[str, Any], before: Dict[str, Any]) -> List[str]:
    """The paths where now differs from before, each with both values."""
    a, b = _masked(now), _masked(before)
    out = []
    for key in sorted(set(a) | set(b)):
        if any(key == p or key.startswith(p + ".") or key.startswith(p + "[") for p in ADDED):
            continue
        if key in ADDED_EMPTY and key not in b and a.get(key) == []:
            continue
        if a.get(key, "<missing>") != b.get(key, "<missing>"):
            out.append(f"{key}: now {a.get(key, '<missing>')!r}, before {b.get(key, '<missing>')!r}")
    return out


def assert_matches_golden(nodeid: str, now: Dict[str, Any], fix: bool = False) -> None:
    before = json.loads(golden_path(nodeid, fix).read_text())
    diff = differences(now, before)
    assert not diff, f"{nodeid}: the document changed:\n" + "\n".join(diff[:40])
