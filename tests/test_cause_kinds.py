"""The cause kinds, listed once in src/lib/cause.h (AFD_CAUSE_KINDS), are the kinds every other
table lists: the incident schema's enum and bench/corpus.py's KINDS. An incident of each
cancellation and hand-off kind, with the operations those kinds name (hand-offs and cancels carry
a site), reads into the C struct and writes back the same (tests/c/incident_roundtrip), and the
schema accepts it; a hand-off without its site is refused by both.
"""
import json
import re
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import jsonschema
import pytest

from helpers import C_BUILD, REPO
ROUNDTRIP = C_BUILD / "incident_roundtrip"
SCHEMA = json.loads((REPO / "docs" / "schema" / "incident.schema.json").read_text())
NEW_KINDS = ["cancelled_handoff", "lost_wakeup", "cancel_swallowed", "cancel_ordering"]


def c_kinds() -> List[str]:
    text = (REPO / "src" / "lib" / "cause.h").read_text()
    table = text[text.index("#define AFD_CAUSE_KINDS(X)"):text.index("typedef enum afd_cause_kind")]
    return re.findall(r'X\(\w+, "(\w+)"', table)


def round_trip(doc: Any) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROUNDTRIP)], input=json.dumps(doc).encode(), capture_output=True, timeout=30)


def incident(kind: str, operations: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {"schema": 1, "nodeid": "t.py::t", "verdict": "reproduced", "timing": None,
            "natural": {"runs": 5, "failed": 2, "ci95": [0.1, 0.8]}, "token": "afd1:x",
            "replay": {"runs": 10, "failed": 10, "identical_traces": True}, "passing_token": None,
            "passing_replay": {"runs": 0, "passed": 0}, "window_us": None, "window": None,
            "cause": {"kind": kind, "resource": "Future@pool.py:28", "await_site": "pool.py:30",
                      "summary": f"{kind} on Future@pool.py:28", "operations": operations, "await_chain": []},
            "evidence": [{"claim": "lock_waiter#1 was handed it and cancelled before it resumed",
                          "measured": "in the minimal failing run", "strength": "observed"}],
            "races": [], "failure": "",
            "environment": {"python": "CPython 3.11.7", "hash_seed": "0", "platform": "Linux"},
            "step_limit_runs": 0, "truncated_traces": 0, "runs": 15, "seconds": 0.5}


OPERATIONS = [
    {"task": "worker#0", "operation": "set_result()", "resource": "Future@pool.py:28", "access": "handoff",
     "site": ""},
    {"task": "wait_for", "operation": "cancel", "resource": "lock_waiter#1", "access": "cancel",
     "site": "pool.py:40"},
    {"task": "lock_waiter#1", "operation": "resume into CancelledError", "resource": "Future@pool.py:28",
     "access": "handoff", "site": "pool.py:30"},
    {"task": "lock_waiter#2", "operation": "wait", "resource": "Future@pool.py:28", "access": "wait"},
    {"run": "failing", "task": "main#0", "operation": "read", "resource": "Conn.closed", "access": "read",
     "step": 1, "occurrence": 0, "observed": True},
]


def test_every_table_lists_the_kinds_cause_h_lists() -> None:
    kinds = c_kinds()
    assert set(NEW_KINDS) <= set(kinds) and kinds[-1] == "other", kinds
    schema_kinds = SCHEMA["properties"]["cause"]["oneOf"][1]["properties"]["kind"]["enum"]
    assert schema_kinds == kinds
    import importlib.util

    spec = importlib.util.spec_from_file_location("corpus", REPO / "bench" / "corpus.py")
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)  # type: ignore[union-attr]
    assert corpus.KINDS == set(kinds) | {None}


@pytest.mark.parametrize("kind", NEW_KINDS)
def test_an_incident_of_each_new_kind_round_trips_and_validates(kind: str) -> None:
    doc = incident(kind, OPERATIONS)
    jsonschema.validate(doc, SCHEMA)
    p = round_trip(doc)
    assert p.returncode == 0, p.stderr.decode()
    assert json.loads(p.stdout) == doc


def test_a_handoff_without_its_site_is_refused() -> None:
    ops = [dict(OPERATIONS[0])]
    del ops[0]["site"]
    doc = incident("cancelled_handoff", ops)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)
    p = round_trip(doc)
    assert p.returncode == 1 and p.stdout == b""
    assert "site" in p.stderr.decode(), p.stderr.decode()
