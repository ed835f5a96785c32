"""Every command's --json against its JSON Schema (docs/schema/<command>.schema.json, draft 2020-12).

Each command runs once on a small input from examples/ or tests/cases/ (for explore and replay both
ways a document can come out: a failure found and none, a replay that reproduces and a stale one),
its document is validated, and every schema is shown able to fail: with any one required key
removed, or a key added where the key set is closed, the document is rejected. investigate, check,
show --json and report --format json print the incident document, whose schema is
docs/schema/incident.schema.json. The store is the test's own (AFFIDAVIT_DIR).
"""

from __future__ import annotations

import copy
import difflib
import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

import jsonschema
import pytest

from helpers import CASES, REPO, describe, engine, engine_json

from affidavit import _runtime

SCHEMAS = REPO / "docs" / "schema"
LOST_UPDATE = "examples/test_lost_update.py::test_concurrent_deposits"
RARE_FLAKE = "examples/test_rare_flake.py::test_uses_fresh_token"
PASSING = f"{CASES}/case_pass.py::test_always_passes"
TARGET = "examples/test_lost_update.py"

# The schema of every command that prints --json, by file name (docs/schema/NAME.schema.json).
COMMAND_SCHEMAS = ["sample", "explore", "replay", "gate", "merge", "ls", "incident"]


def schema(name: str) -> Dict[str, Any]:
    path = SCHEMAS / f"{name}.schema.json"
    assert path.is_file(), f"{path} is missing (incident.schema.json comes with the incident model)"
    return json.loads(path.read_text())


def validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(name))


def assert_valid(name: str, doc: Any) -> None:
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, f"{name}: " + "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors) + f"\n{doc}"


def store_env(tmp: Path) -> Dict[str, str]:
    return {"AFFIDAVIT_DIR": str(tmp / "store")}


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> List[Tuple[str, str, Any]]:
    """(what ran, schema name, document) for every command but investigate and check."""
    tmp = tmp_path_factory.mktemp("schema")
    env = store_env(tmp)
    docs: List[Tuple[str, str, Any]] = []

    _, d = engine_json("sample", PASSING, "-n", "3", expect=0, env=env)
    docs.append(("sample, passing", "sample", d))
    _, d = engine_json("sample", LOST_UPDATE, "-n", "3", expect=None, env=env)
    docs.append(("sample, flaky", "sample", d))

    _, found = engine_json("explore", LOST_UPDATE, "--runs", "200", expect=1, env=env)
    assert found["found"] is True, found
    docs.append(("explore, found", "explore", found))
    _, d = engine_json("explore", PASSING, "--runs", "3", expect=0, env=env)
    assert d["found"] is False, d
    docs.append(("explore, not found", "explore", d))
    # A failure that is a timer running out, not a race (tests/test_timing.py): the timing object.
    _, d = engine_json("explore", f"{CASES}/case_timing.py::test_locked_increments_within_wait_timeout", "--runs", "60",
                       expect=1, env=env)
    assert d["verdict"] == "timing_sensitive" and isinstance(d["timing"], dict), d
    docs.append(("explore, timing-sensitive", "explore", d))

    _, d = engine_json("replay", found["token"], LOST_UPDATE, "-n", "2", expect=1, env=env)
    docs.append(("replay, reproduced", "replay", d))
    # The rare flake's cause (its test task's first step delayed) is not a step of the lost update.
    stale = _runtime.token_encode("zero", 0, delays=[("test_uses_fresh_token#0", 0, 10_000_000)])
    _, d = engine_json("replay", stale, LOST_UPDATE, "-n", "2", expect=5, env=env)
    assert d["verdict"] == "stale" and d["delays_never_ran"], d
    docs.append(("replay, stale", "replay", d))

    before = (REPO / TARGET).read_text()
    after = before.replace("    await asyncio.gather(deposit(10), deposit(20))\n",
                           "    await deposit(10)\n    await asyncio.sleep(0.01)\n    await deposit(20)\n")
    assert after != before
    diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{TARGET}",
                                        f"b/{TARGET}"))
    _, d = engine_json("gate", "-", expect=1, input=diff, workers=False)
    docs.append(("gate", "gate", d))

    results = tmp / "shard-1-of-1.jsonl"
    results.write_text(json.dumps(found) + "\n")
    _, d = engine_json("merge", str(results), expect=0, env=env, workers=False)
    assert d["merged"] == 1 and len(d["incidents"]) == 1, d
    docs.append(("merge", "merge", d))
    proc = engine("ls", "--json", env=env, workers=False)
    assert proc.returncode == 0, describe(proc)
    rows = json.loads(proc.stdout)
    assert len(rows) == 1, rows
    docs.append(("ls", "ls", rows))
    return docs


def test_every_schema_is_a_draft_2020_12_schema() -> None:
    names = sorted(p.name[: -len(".schema.json")] for p in SCHEMAS.glob("*.schema.json"))
    assert names == sorted(COMMAND_SCHEMAS), names
    for name in names:
        doc = schema(name)
        assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema", name
        jsonschema.Draft202012Validator.check_schema(doc)


def test_every_command_document_matches_its_schema(documents: List[Tuple[str, str, Any]]) -> None:
    assert {name for _, name, _ in documents} == set(COMMAND_SCHEMAS) - {"incident"}
    for what, name, doc in documents:
        if isinstance(doc, dict):
            assert doc.get("schema") == 1, (what, doc)
        assert_valid(name, doc)


def without_each_required_key(sch: Dict[str, Any], doc: Any) -> List[Tuple[str, Any]]:
    """(key, doc less that key) for every key the schema requires of the document (of its rows,
    for an array)."""
    if isinstance(doc, list):
        return [(key, [row] + doc[1:]) for key, row in without_each_required_key(sch["items"], doc[0])]
    out = []
    for key in sch["required"]:
        assert key in doc, (key, doc)
        less = copy.deepcopy(doc)
        del less[key]
        out.append((key, less))
    return out


def test_a_document_less_a_required_key_or_with_an_unknown_one_is_rejected(
        documents: List[Tuple[str, str, Any]]) -> None:
    for what, name, doc in documents:
        sch = schema(name)
        v = jsonschema.Draft202012Validator(sch)
        assert v.is_valid(doc), what
        for key, less in without_each_required_key(sch, doc):
            errors = list(v.iter_errors(less))
            assert any(e.validator == "required" and repr(key) in e.message for e in errors), (what, key, errors)
        more = copy.deepcopy(doc)
        (more[0] if isinstance(more, list) else more)["not_a_key"] = 1
        assert not v.is_valid(more), f"{what}: a key outside the schema must be rejected"


def test_a_wrong_schema_version_or_outcome_is_rejected(documents: List[Tuple[str, str, Any]]) -> None:
    what, name, doc = next(d for d in documents if d[1] == "explore")
    v = validator(name)
    assert not v.is_valid(dict(doc, schema=2)), what
    assert not v.is_valid(dict(doc, outcome="flaky")), what
    assert not v.is_valid(dict(doc, outcomes={**doc["outcomes"], "pass": -1})), what


# ---- the incident document: investigate, check, show and report ----


def test_investigate_check_show_and_report_print_incident_documents(tmp_path: Path) -> None:
    env = store_env(tmp_path)
    _, inv = engine_json("investigate", LOST_UPDATE, "--natural", "10", "--replays", "3", expect=1, env=env,
                         timeout=300)
    assert_valid("incident", inv)
    n = str(inv["incident"])
    for args in (("show", n, "--json"), ("report", n, "--format", "json")):
        proc = engine(*args, env=env, workers=False)
        assert proc.returncode == 0, describe(proc)
        assert_valid("incident", json.loads(proc.stdout))
    _, chk = engine_json("check", f"{CASES}/check_targets.py", "--cls", "MemoryCounter", "--method", "increment",
                         "--calls", "5", "--natural", "10", expect=1, env=env, timeout=300)
    assert_valid("incident", chk)
    sch = schema("incident")
    for key, less in without_each_required_key(sch, inv):
        assert not jsonschema.Draft202012Validator(sch).is_valid(less), f"incident without {key!r} was accepted"
