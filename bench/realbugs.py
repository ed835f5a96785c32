"""The real-bugs corpus: every case in bench/realbugs/ through the engine, both variants, one table.

A case is a directory `bench/realbugs/<case>/` holding README.md (the write-up, with the URL of the
real report), `<case>_buggy.py` and `<case>_fixed.py` (the library code before and after the real
fix's shape, one API) and `test_<case>.py`, whose tests run against both variants through a fixture
(node ids end in `[buggy]` and `[fixed]`) and which holds a module-level

    EXPECTED = {"cause": "cancelled_handoff",        # one of CAUSE_KINDS
                "resource": "Lock@",                 # a substring (or a list of alternatives)
                "await": "<case>_buggy.py:41",       # file:line of the await (or a list of them)
                "fix": "HANDOFF_CLEANUP",            # one of FIX_KINDS, or None
                "tags": ["cancellation"],            # any of TAGS
                "fixed": "timing_sensitive",         # optional: only for a fixed variant that is a threshold
                "test": "test_name"}                 # optional: the test to run (default: the first one)

written before the tool was run on the case. For every case, sequentially (an engine call already
uses every core):

1. `affidavit investigate NODEID[buggy] --fix --allow-src --json --natural 50 (the bugs live in library modules, not in test files, so a fix must be allowed to edit them)` and the same on `[fixed]`;
2. `affidavit replay TOKEN NODEID[buggy] -n 10 --json` on the token investigate found.

Prints one table (case, variant, verdict, cause kind, resource, await named, fix kind, verification
tiers passed, replay k/10, match of cause/resource/await against EXPECTED), then the totals issue 20
accepts on: reproduced and replayed 10/10, right cause kind + resource + await, verified fix (each a
% of the cases), FIXED variants reported as a race (must be 0) and the tag counts. Writes
bench/realbugs_results.json (every row, the totals, the commit, the date) and exits 1 when the
acceptance is not met, 2 on a usage error. `--only NAME` runs the cases whose name contains NAME
(their rows then replace the same rows in an existing realbugs_results.json, and the totals are of
the merged rows); `--list` prints the cases and their EXPECTED without running anything.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import re
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import engine, find_affidavit, resource_matches, short_resource, tiers_failed, tiers_passed  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "bench", "realbugs")
RESULTS = os.path.join(ROOT, "bench", "realbugs_results.json")

CAUSE_KINDS = ("lost_update", "check_then_act", "order_violation", "deadlock", "lock_order", "starvation",
               "cancelled_handoff", "lost_wakeup", "cancel_swallowed", "cancel_ordering")
FIX_KINDS = ("LOCK", "LOCK_CALLER", "RECHECK", "SINGLE_FLIGHT", "HANDOFF_AT_WAKEUP", "HANDOFF_CLEANUP",
             "AWAIT_TASK", "DRAIN_TASKS", "EVENT_GATE", "LOCK_ORDER")
TAGS = ("cancellation", "check_then_act_across_functions", "lazy_init", "stampede", "handoff",
        "background_task", "call_chain")
CANCEL_KINDS = ("cancelled_handoff", "lost_wakeup", "cancel_swallowed", "cancel_ordering")
FIXED_VERDICTS = ("no_failure", "timing_sensitive")
VARIANTS = ("buggy", "fixed")
REQUIRED_KEYS = ("cause", "resource", "await", "fix", "tags")

REPLAY_N = 10
# What issue 20 accepts: minimum counts of cases per tag (lazy_init and stampede count together),
# and minimum shares of the cases.
MIN_CASES = 24
MIN_TAGS = {"cancellation": 10, "check_then_act_across_functions": 5, "lazy_init|stampede": 3}
MIN_REPRODUCED_PCT = 100.0
MIN_RIGHT_CAUSE_PCT = 85.0
MIN_VERIFIED_FIX_PCT = 60.0

AWAIT_RE = re.compile(r"^[\w.\-/]+\.py:\d+$")


# ----------------------------------------------------------------------------------------- cases

def expected_problems(expected: Any) -> List[str]:
    """What is wrong with a case's EXPECTED (empty when it is well-formed)."""
    if not isinstance(expected, dict):
        return [f"EXPECTED is missing or not a dict: {expected!r}"]
    problems = [f"EXPECTED has no {k!r}" for k in REQUIRED_KEYS if k not in expected]
    if expected.get("cause") not in CAUSE_KINDS:
        problems.append(f"EXPECTED cause {expected.get('cause')!r} is not one of {', '.join(CAUSE_KINDS)}")
    if expected.get("fix") is not None and expected.get("fix") not in FIX_KINDS:
        problems.append(f"EXPECTED fix {expected.get('fix')!r} is not None nor one of {', '.join(FIX_KINDS)}")
    for key in ("resource", "await"):
        value = expected.get(key)
        alternatives = [value] if isinstance(value, str) else value
        if not isinstance(alternatives, list) or not alternatives \
                or not all(isinstance(a, str) and a for a in alternatives):
            problems.append(f"EXPECTED {key} must be a non-empty string or list of them: {value!r}")
        elif key == "await" and not all(AWAIT_RE.match(a) for a in alternatives):
            problems.append(f"EXPECTED await must be FILE.py:LINE: {value!r}")
    tags = expected.get("tags")
    if not isinstance(tags, list) or not tags or not all(t in TAGS for t in tags):
        problems.append(f"EXPECTED tags must be a non-empty list of {', '.join(TAGS)}: {tags!r}")
    if expected.get("fixed", "no_failure") not in FIXED_VERDICTS:
        problems.append(f"EXPECTED fixed must be one of {', '.join(FIXED_VERDICTS)}: {expected.get('fixed')!r}")
    return problems


def load_case(name: str) -> Dict[str, Any]:
    """Reads a case directory without importing anything: EXPECTED, the test to run, what is missing."""
    rel_dir = os.path.relpath(os.path.join(CASES, name), ROOT)
    test_file = os.path.join(rel_dir, f"test_{name}.py")
    problems: List[str] = []
    for f in ("README.md", f"{name}_buggy.py", f"{name}_fixed.py", f"test_{name}.py"):
        if not os.path.isfile(os.path.join(ROOT, rel_dir, f)):
            problems.append(f"no {f}")
    expected: Any = None
    tests: List[str] = []
    try:
        with open(os.path.join(ROOT, test_file), encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename=test_file)
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EXPECTED"
                                                    for t in node.targets):
                expected = ast.literal_eval(node.value)
            if isinstance(node, (ast.AsyncFunctionDef, ast.FunctionDef)) and node.name.startswith("test"):
                tests.append(node.name)
    except (OSError, SyntaxError, ValueError) as e:
        problems.append(f"test_{name}.py unreadable: {type(e).__name__}: {e}")
    problems += expected_problems(expected)
    test = expected.get("test") if isinstance(expected, dict) and expected.get("test") else (tests or [None])[0]
    if test is None or test not in tests:
        problems.append(f"no test function {test!r} in test_{name}.py (found {tests})")
    return {"name": name, "file": test_file, "test": test, "expected": expected if isinstance(expected, dict) else {},
            "problems": problems}


def discover(only: Optional[str]) -> List[Dict[str, Any]]:
    names = sorted(d for d in os.listdir(CASES) if os.path.isdir(os.path.join(CASES, d))
                   and not d.startswith((".", "_"))) if os.path.isdir(CASES) else []
    if only:
        names = [n for n in names if only in n]
    return [load_case(n) for n in names]


# ---------------------------------------------------------------------------------------- engine

def await_matches(want: Any, got: Optional[str]) -> bool:
    """EXPECTED's await (`file.py:41`, or a list) against the site named: same file, same line, not `:410`."""
    alternatives = [want] if isinstance(want, str) else list(want or [])
    return any(re.search(r"(^|/)" + re.escape(a) + r"(?!\d)", got or "") for a in alternatives)


def error_row(case: Dict[str, Any], variant: str, errors: List[str]) -> Dict[str, Any]:
    return {"case": case["name"], "variant": variant, "nodeid": f"{case['file']}::{case['test']}[{variant}]",
            "expected": case["expected"], "verdict": None, "cause": None, "fix": None, "replay": None,
            "errors": errors}


def run_variant(afd: str, case: Dict[str, Any], variant: str) -> Dict[str, Any]:
    """investigate (and for [buggy] replay) on one variant: its row."""
    row = error_row(case, variant, list(case["problems"]))
    node = row["nodeid"]
    errors = row["errors"]
    t0 = time.perf_counter()
    inv, inv_wall, inv_rc, inv_err = engine(afd, ["investigate", node, "--fix", "--allow-src", "--natural", "50"])
    if inv is None:
        errors.append(f"investigate: exit {inv_rc}: {inv_err}")
        inv = {}
    cause = inv.get("cause") if isinstance(inv.get("cause"), dict) else {}
    fix = inv.get("fix") if isinstance(inv.get("fix"), dict) else {}
    row.update({
        "exit": inv_rc, "investigate_wall_s": round(inv_wall, 3), "verdict": inv.get("verdict"),
        "natural": inv.get("natural"), "token": inv.get("token"),
        "cause": {k: cause.get(k) for k in ("kind", "resource", "await_site", "summary")} if cause else None,
        "fix": {"kind": fix.get("kind"), "verified": bool(fix.get("verified")), "why_none": fix.get("why_none"),
                "tiers_passed": tiers_passed(fix), "tiers_failed": tiers_failed(fix), "tiers": fix.get("tiers"),
                "gate_failed": [g.get("check") for g in fix.get("gate") or [] if isinstance(g, dict) and not g.get("passed")]}
        if fix else None,
        "failure": inv.get("failure"),
        # the forcing evidence of a cancellation cause: the cancel moved one step earlier / later
        "forcing": [{k: e.get(k) for k in ("claim", "measured", "strength")} for e in inv.get("evidence") or []
                    if isinstance(e, dict) and str(e.get("claim", "")).startswith("the cancel one step")],
    })
    if variant == "buggy" and inv.get("token"):
        rep, rep_wall, rep_rc, rep_err = engine(afd, ["replay", inv["token"], node, "-n", str(REPLAY_N)])
        if rep is None:
            errors.append(f"replay: exit {rep_rc}: {rep_err}")
            rep = {}
        row["replay"] = {"wall_s": round(rep_wall, 3), "runs": rep.get("runs"), "failed": rep.get("failed"),
                         "identical_traces": rep.get("identical_traces")}
    judge(row)
    row["wall_s"] = round(time.perf_counter() - t0, 3)
    return row


def judge(row: Dict[str, Any]) -> None:
    """Fills the row's matches against EXPECTED (the row already holds the engine's answers)."""
    exp = row["expected"] or {}
    cause = row.get("cause") or {}
    if row["variant"] == "buggy":
        rep = row.get("replay") or {}
        row["reproduced_replayed"] = (row.get("verdict") == "reproduced" and rep.get("runs") == REPLAY_N
                                      and rep.get("failed") == REPLAY_N)
        row["cause_match"] = bool(cause) and cause.get("kind") == exp.get("cause")
        row["resource_match"] = bool(cause) and resource_matches(exp.get("resource"), cause.get("resource"))
        row["await_match"] = bool(cause) and await_matches(exp.get("await"), cause.get("await_site"))
        row["right_cause"] = row["cause_match"] and row["resource_match"] and row["await_match"]
        row["verified_fix"] = bool((row.get("fix") or {}).get("verified"))
        row["fix_kind_match"] = (row.get("fix") or {}).get("kind") == exp.get("fix")
    else:
        want = exp.get("fixed", "no_failure")
        row["fixed_as_race"] = row.get("verdict") == "reproduced" or bool(cause)
        row["fixed_ok"] = row.get("verdict") == want and not cause


# ---------------------------------------------------------------------------------------- totals

def tag_counts(cases: List[Dict[str, Any]]) -> Dict[str, int]:
    counts = {t: 0 for t in TAGS}
    for c in cases:
        for t in set((c["expected"] or {}).get("tags") or []):
            if t in counts:
                counts[t] += 1
    counts["lazy_init|stampede"] = sum(1 for c in cases if {"lazy_init", "stampede"} & set(
        (c["expected"] or {}).get("tags") or []))
    return counts


def totals(cases: List[Dict[str, Any]], rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    buggy = [r for r in rows if r["variant"] == "buggy"]
    fixed = [r for r in rows if r["variant"] == "fixed"]
    n = len(buggy)

    def pct(key: str) -> float:
        return round(100.0 * sum(1 for r in buggy if r.get(key)) / n, 1) if n else 0.0

    tags = tag_counts(cases)
    t: Dict[str, Any] = {
        "cases": len(cases),
        "reproduced_replayed_10_pct": pct("reproduced_replayed"),
        "right_cause_resource_await_pct": pct("right_cause"),
        "right_cause_kind_pct": pct("cause_match"),
        "verified_fix_pct": pct("verified_fix"),
        "fix_kind_as_expected_pct": pct("fix_kind_match"),
        "fixed_reported_as_race": sum(1 for r in fixed if r.get("fixed_as_race")),
        "fixed_not_as_expected": sum(1 for r in fixed if not r.get("fixed_ok")),
        "errors": sum(1 for r in rows if r.get("errors")),
        "tags": tags,
    }
    # of the cases named with a cancellation kind: how many have a forcing row every replay confirmed
    cancel = [r for r in buggy if (r.get("cause") or {}).get("kind") in CANCEL_KINDS]
    t["cancel_kind_cases"] = len(cancel)
    for d in ("earlier", "later"):
        t[f"forcing_{d}_confirmed"] = sum(1 for r in cancel if any(
            f["strength"] == "confirmed" and f["claim"].startswith(f"the cancel one step {d}")
            for f in r.get("forcing") or []))
    unmet = []
    if len(cases) < MIN_CASES:
        unmet.append(f"cases {len(cases)} < {MIN_CASES}")
    for tag, least in MIN_TAGS.items():
        if tags[tag] < least:
            unmet.append(f"{tag} {tags[tag]} < {least}")
    for key, least in (("reproduced_replayed_10_pct", MIN_REPRODUCED_PCT),
                       ("right_cause_resource_await_pct", MIN_RIGHT_CAUSE_PCT),
                       ("verified_fix_pct", MIN_VERIFIED_FIX_PCT)):
        if t[key] < least:
            unmet.append(f"{key} {t[key]} < {least}")
    if t["fixed_not_as_expected"]:
        unmet.append(f"{t['fixed_not_as_expected']} FIXED variants not as expected "
                     f"({t['fixed_reported_as_race']} reported as a race)")
    if t["errors"]:
        unmet.append(f"{t['errors']} rows with errors")
    t["acceptance_unmet"] = unmet
    t["acceptance_met"] = not unmet
    return t


# ----------------------------------------------------------------------------------------- table

def short_site(site: Optional[str]) -> str:
    return (site or "-").rsplit("/", 1)[-1]


def fmt_row(r: Dict[str, Any]) -> List[str]:
    cause = r.get("cause") or {}
    fix = r.get("fix") or {}
    rep = r.get("replay") or {}
    if r["variant"] == "buggy":
        marks = "".join(c if r.get(k) else "-" for c, k in (("C", "cause_match"), ("R", "resource_match"),
                                                             ("A", "await_match")))
        replay = f"{rep.get('failed')}/{rep.get('runs')}" if rep.get("runs") is not None else "-"
    else:
        marks = "ok" if r.get("fixed_ok") else ("RACE" if r.get("fixed_as_race") else "WRONG")
        replay = ""
    verified = ("yes " if fix.get("verified") else "no ") + (",".join(fix.get("tiers_passed") or []) or "-") \
        if fix.get("kind") else "-"
    return [r["case"], r["variant"], str(r.get("verdict") or "-"), cause.get("kind") or "-",
            short_resource(cause.get("resource") or "") or "-", short_site(cause.get("await_site")),
            fix.get("kind") or "-", verified, replay, marks + (" [error]" if r.get("errors") else "")]


def print_table(rows: List[Dict[str, Any]], tot: Dict[str, Any], out: Any = sys.stdout) -> None:
    head = ["case", "variant", "verdict", "cause", "resource", "await", "fix", "verified", "replay", "match"]
    body = [fmt_row(r) for r in rows]
    widths = [max([len(h)] + [len(b[i]) for b in body]) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for b in body:
        print("  ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip(), file=out)
    tags = tot["tags"]
    print(f"\n{tot['cases']} cases: reproduced and replayed {REPLAY_N}/{REPLAY_N} "
          f"{tot['reproduced_replayed_10_pct']}% (need {MIN_REPRODUCED_PCT:g}%); right cause kind + resource + "
          f"await {tot['right_cause_resource_await_pct']}% (need {MIN_RIGHT_CAUSE_PCT:g}%; kind alone "
          f"{tot['right_cause_kind_pct']}%); verified fix {tot['verified_fix_pct']}% (need "
          f"{MIN_VERIFIED_FIX_PCT:g}%; the expected fix kind {tot['fix_kind_as_expected_pct']}%); FIXED reported "
          f"as a race {tot['fixed_reported_as_race']} (need 0), FIXED not as expected {tot['fixed_not_as_expected']}",
          file=out)
    print(f"forcing evidence (the cancel moved, every replay flips the outcome): one step earlier "
          f"{tot['forcing_earlier_confirmed']}, one step later {tot['forcing_later_confirmed']} of the "
          f"{tot['cancel_kind_cases']} cases named with a cancellation kind", file=out)
    print("tags: " + ", ".join(f"{k} {v}" for k, v in tags.items())
          + f" (need cases >= {MIN_CASES}, " + ", ".join(f"{k} >= {v}" for k, v in MIN_TAGS.items()) + ")", file=out)
    print("acceptance: " + ("met" if tot["acceptance_met"] else "NOT met: " + "; ".join(tot["acceptance_unmet"])),
          file=out)


def print_list(cases: List[Dict[str, Any]]) -> None:
    for c in cases:
        e = c["expected"]
        print(f"{c['name']}: {c['file']}::{c['test']}  cause={e.get('cause')} resource={e.get('resource')!r} "
              f"await={e.get('await')!r} fix={e.get('fix')} tags={','.join(e.get('tags') or [])}"
              + (f" fixed={e['fixed']}" if e.get("fixed") else ""))
        for p in c["problems"]:
            print(f"  problem: {p}")
    print(f"{len(cases)} cases; tags: " + ", ".join(f"{k} {v}" for k, v in tag_counts(cases).items()))


# ------------------------------------------------------------------------------------------ main

def commit() -> Optional[str]:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() or None


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--only", metavar="NAME", help="run only the cases whose name contains NAME")
    ap.add_argument("--list", action="store_true", help="list the cases and their EXPECTED without running")
    ap.add_argument("--affidavit", metavar="PATH", help="the affidavit executable (default: beside this python)")
    args = ap.parse_args(argv)
    cases = discover(args.only)
    if not cases:
        print(f"realbugs.py: no case in bench/realbugs/ matches {args.only!r}" if args.only
              else "realbugs.py: bench/realbugs/ holds no case", file=sys.stderr)
        return 2
    if args.list:
        print_list(cases)
        return 0
    afd = find_affidavit(args.affidavit)
    t0 = time.perf_counter()
    rows: List[Dict[str, Any]] = []
    for i, case in enumerate(cases, 1):
        for variant in VARIANTS:
            try:
                row = run_variant(afd, case, variant)
            except Exception as e:  # an answer of a shape not foreseen: the row says so, the run goes on
                row = error_row(case, variant, list(case["problems"]) + [f"realbugs.py: {type(e).__name__}: {e}"])
                judge(row)
            print(f"[{i}/{len(cases)}] {case['name']}[{variant}]: {row.get('verdict')} "
                  f"{(row.get('cause') or {}).get('kind') or '-'}" + (" (error)" if row["errors"] else ""),
                  file=sys.stderr, flush=True)
            rows.append(row)
    wall = time.perf_counter() - t0

    # With --only, the rows run now replace the same cases' rows of the last full run; the totals are of
    # the cases present now, so a deleted case leaves the results.
    present = {c["name"] for c in discover(None)}
    merged = {(r["case"], r["variant"]): r for r in rows}
    if args.only and os.path.exists(RESULTS):
        try:
            with open(RESULTS, encoding="utf-8") as f:
                old = json.load(f)
            for r in old.get("rows", []):
                if r["case"] in present:
                    merged.setdefault((r["case"], r["variant"]), r)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    all_rows = [merged[k] for k in sorted(merged)]
    all_cases = [c for c in discover(None) if any(r["case"] == c["name"] for r in all_rows)]
    tot = totals(all_cases, all_rows)
    doc = {
        "commit": commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "engine": afd,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "settings": {"investigate": "--fix --allow-src --natural 50", "replays": REPLAY_N},
        "last_invocation": {"only": args.only, "cases": [c["name"] for c in cases], "wall_s": round(wall, 3)},
        "totals": tot,
        "rows": all_rows,
    }
    with open(RESULTS, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print_table(all_rows, tot)
    return 0 if tot["acceptance_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
