"""The benchmark corpus: every case in bench/cases/ through the whole engine, one table.

Each case is a small pytest file with one bug (or a control that has none), a module docstring
whose first line says what it is, and a module-level

    EXPECTED = {"verdict": "reproduced" | "no_failure" | "abstained" | "deterministic",
                "cause": "lost_update" | "check_then_act" | "order_violation" | "deadlock"
                         | "lock_order" | "starvation" | "cancelled_handoff" | "lost_wakeup"
                         | "cancel_swallowed" | "cancel_ordering" | "other" | None,
                "resource": "SETTINGS"}   # optional: a substring (or a list of alternatives)
                                          # the named cause's resource must contain

A case matches when the verdict, the cause kind and (when given) the resource all match: the right
kind named on the wrong state is not the right cause.

For every case, sequentially (each engine call already uses every core):

1. `affidavit investigate NODEID --fix --json --natural 50`: the verdict, the cause it names and
   the fix it proposes with the verification tiers that fix passed;
2. `affidavit sample NODEID -n 200 --json`: the natural failure rate, and from it the natural
   reruns to a first failure (1/rate, or "> 200" when none of the 200 failed);
3. `affidavit explore NODEID --runs 500 --json`: the controlled run at which the first failing
   schedule turned up (`failing_run`);
4. `affidavit replay TOKEN NODEID -n 10 --json` on that schedule (investigate's own token when
   explore found none): how deterministic the replay is, k/10 failed.

Prints one table, writes bench/corpus_results.json, and exits 1 when any case's verdict or cause
differs from its EXPECTED (2 on a usage error). `--only NAME` runs the cases whose file name
contains NAME (`--only lost_update` or `--only test_lost_update.py`); their entries then replace
the same cases' entries in an existing corpus_results.json.

Run it from anywhere: the engine is run from the repository root, whose pyproject.toml sets
`asyncio_default_fixture_loop_scope`. The whole corpus takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "bench", "cases")
RESULTS = os.path.join(ROOT, "bench", "corpus_results.json")

VERDICTS = {"reproduced", "no_failure", "abstained", "deterministic"}
KINDS = {"lost_update", "check_then_act", "order_violation", "deadlock", "lock_order", "starvation",
         "cancelled_handoff", "lost_wakeup", "cancel_swallowed", "cancel_ordering", "other", None}

NATURAL_N = 200  # sample size for the natural rate
EXPLORE_N = 500  # controlled schedules explore may spend on a first failure
REPLAY_N = 10
CALL_TIMEOUT = 300  # seconds for one engine call before the case is marked as an error
RUN_TIMEOUT = "5"  # per-run budget in seconds (every case runs well under 100 ms)


def find_affidavit(explicit: Optional[str]) -> str:
    for cand in (explicit, os.path.join(os.path.dirname(sys.executable), "affidavit"),
                 os.path.join(ROOT, ".venv", "bin", "affidavit")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    sys.exit("corpus.py: no affidavit executable (run it with .venv/bin/python, or pass --affidavit PATH)")


# ----------------------------------------------------------------------------------------- cases

def load_case(path: str) -> Dict[str, Any]:
    """Reads a case without importing it: its docstring, EXPECTED and its test function."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    doc = ast.get_docstring(tree) or ""
    expected = None
    tests: List[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EXPECTED" for t in node.targets):
            expected = ast.literal_eval(node.value)
        if isinstance(node, (ast.AsyncFunctionDef, ast.FunctionDef)) and node.name.startswith("test"):
            tests.append(node.name)
    rel = os.path.relpath(path, ROOT)
    problems = []
    if not doc:
        problems.append("no module docstring")
    if not isinstance(expected, dict) or expected.get("verdict") not in VERDICTS or expected.get("cause", "?") not in KINDS \
            or not isinstance(expected.get("resource", ""), (str, list)):
        problems.append(f"EXPECTED is missing or malformed: {expected!r}")
    if len(tests) != 1:
        problems.append(f"expected exactly one test function, found {tests}")
    stem = os.path.splitext(os.path.basename(path))[0]
    return {
        "name": stem[5:] if stem.startswith("test_") else stem,
        "file": rel,
        "nodeid": f"{rel}::{tests[0]}" if tests else rel,
        "description": doc.strip().splitlines()[0] if doc else "",
        "expected": expected,
        "problems": problems,
    }


def discover(only: Optional[str]) -> List[Dict[str, Any]]:
    files = sorted(f for f in os.listdir(CASES) if f.startswith("test_") and f.endswith(".py"))
    if only:
        files = [f for f in files if only in f]
    return [load_case(os.path.join(CASES, f)) for f in files]


# ---------------------------------------------------------------------------------------- engine

def engine(afd: str, args: List[str]) -> Tuple[Optional[Dict[str, Any]], float, int, str]:
    """One engine call from the repository root: (its JSON or None, wall seconds, exit code, stderr tail)."""
    t0 = time.perf_counter()
    try:
        out = subprocess.run([afd, *args, "--json", "--timeout", RUN_TIMEOUT], cwd=ROOT, capture_output=True,
                             text=True, timeout=CALL_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - t0, -1, f"no answer within {CALL_TIMEOUT} s"
    wall = time.perf_counter() - t0
    doc = None
    if out.stdout.strip():
        try:
            doc = json.loads(out.stdout)
        except json.JSONDecodeError:
            doc = None
    return doc, wall, out.returncode, out.stderr.strip()[-400:]


def _tier(fix: Dict[str, Any], name: str) -> Optional[Dict[str, Any]]:
    """One verification tier's counts, or None when it was not run (the engine then says why, as a string)."""
    tiers = fix.get("tiers")
    tier = tiers.get(name) if isinstance(tiers, dict) else None
    return tier if isinstance(tier, dict) else None


def _regression(fix: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    reg = fix.get("regression_test")
    return reg if isinstance(reg, dict) else None


def tiers_passed(fix: Dict[str, Any]) -> List[str]:
    """The verification tiers a fix passed, by name."""
    passed = []
    rp = _tier(fix, "replay")
    if rp and rp.get("runs") and rp.get("passed") == rp.get("runs"):
        passed.append("replay")
    ex = _tier(fix, "exploration")
    if ex and ex.get("schedules") and ex.get("failed_after") == 0:
        passed.append("explore")
    nat = _tier(fix, "natural")
    if nat and nat.get("runs") and nat.get("failed") == 0:
        passed.append("natural")
    reg = _regression(fix)
    if reg and reg.get("fails_before") and reg.get("passes_after"):
        passed.append("regress")
    return passed


def tiers_failed(fix: Dict[str, Any]) -> List[str]:
    """The verification tiers a fix was put through and failed, by name."""
    failed = []
    rp = _tier(fix, "replay")
    if rp and rp.get("runs") and rp.get("passed") != rp.get("runs"):
        failed.append("replay")
    ex = _tier(fix, "exploration")
    if ex and ex.get("schedules") and ex.get("failed_after"):
        failed.append("explore")
    nat = _tier(fix, "natural")
    if nat and nat.get("runs") and nat.get("failed"):
        failed.append("natural")
    reg = _regression(fix)
    if reg and not (reg.get("fails_before") and reg.get("passes_after")):
        failed.append("regress")
    return failed


def resource_matches(want: Any, got: Optional[str]) -> bool:
    """EXPECTED's optional resource: a substring, or a list of alternatives, of the named resource."""
    if not want:
        return True
    alternatives = [want] if isinstance(want, str) else list(want)
    return any(a in (got or "") for a in alternatives)


def run_case(afd: str, case: Dict[str, Any]) -> Dict[str, Any]:
    node = case["nodeid"]
    res: Dict[str, Any] = {k: case[k] for k in ("name", "file", "nodeid", "description", "expected")}
    errors: List[str] = list(case["problems"])
    t0 = time.perf_counter()

    inv, inv_wall, inv_rc, inv_err = engine(afd, ["investigate", node, "--fix", "--natural", "50"])
    if inv is None:
        errors.append(f"investigate: exit {inv_rc}: {inv_err}")
        inv = {}
    cause = inv.get("cause") or {}
    fix = inv.get("fix") or {}
    res["investigate"] = {
        "exit": inv_rc,
        "wall_s": round(inv_wall, 3),
        "verdict": inv.get("verdict"),
        "natural": inv.get("natural"),
        "replay": inv.get("replay"),
        "window_us": inv.get("window_us"),
        "token": inv.get("token"),
        "cause": {k: cause.get(k) for k in ("kind", "resource", "await_site", "summary")} if cause else None,
        "failure": inv.get("failure"),
        "fix": {
            "kind": fix.get("kind"),
            "verified": fix.get("verified"),
            "why_none": fix.get("why_none"),
            "tiers": fix.get("tiers"),
            "tiers_passed": tiers_passed(fix) if fix else [],
            "tiers_failed": tiers_failed(fix) if fix else [],
            "regression_test": fix.get("regression_test"),
            "candidates": fix.get("candidates"),
        } if fix else None,
        "runs": inv.get("runs"),
        "seconds": inv.get("seconds"),
        "incident": inv.get("incident"),
    }

    smp, smp_wall, smp_rc, smp_err = engine(afd, ["sample", node, "-n", str(NATURAL_N)])
    if smp is None:
        errors.append(f"sample: exit {smp_rc}: {smp_err}")
        smp = {}
    runs, failed = smp.get("runs") or 0, smp.get("failed") or 0
    res["sample"] = {"wall_s": round(smp_wall, 3), "runs": runs, "failed": failed, "rate": smp.get("rate"),
                     "ci95": smp.get("ci95"), "outcomes": smp.get("outcomes"),
                     "median_wall_ms": smp.get("median_wall_ms"), "failure": smp.get("failure")}
    res["natural_reruns_to_first_failure"] = (runs / failed) if failed else None  # 1/rate

    exp, exp_wall, exp_rc, exp_err = engine(afd, ["explore", node, "--runs", str(EXPLORE_N)])
    if exp is None:
        errors.append(f"explore: exit {exp_rc}: {exp_err}")
        exp = {}
    res["explore"] = {"wall_s": round(exp_wall, 3), "found": exp.get("found"), "runs": exp.get("runs"),
                      "failing_run": exp.get("failing_run"), "schedule": exp.get("schedule"),
                      "token": exp.get("token"), "failure": exp.get("failure")}

    token, source = exp.get("token"), "explore"
    if not token:
        token, source = inv.get("token"), "investigate"
    if token:
        rep, rep_wall, rep_rc, rep_err = engine(afd, ["replay", token, node, "-n", str(REPLAY_N)])
        if rep is None:
            errors.append(f"replay: exit {rep_rc}: {rep_err}")
            rep = {}
        res["replay"] = {"wall_s": round(rep_wall, 3), "token_from": source, "token": token,
                         "runs": rep.get("runs"), "failed": rep.get("failed"),
                         "identical_traces": rep.get("identical_traces"), "uncontrolled": rep.get("uncontrolled")}
    else:
        res["replay"] = None

    expected = case["expected"] or {}
    got_kind = cause.get("kind") if cause else None
    res["verdict_matches"] = inv.get("verdict") == expected.get("verdict")
    res["cause_matches"] = bool(inv) and got_kind == expected.get("cause")
    res["resource_matches"] = resource_matches(expected.get("resource"), cause.get("resource") if cause else None)
    res["errors"] = errors
    res["matches"] = res["verdict_matches"] and res["cause_matches"] and res["resource_matches"] and not errors
    res["wall_s"] = round(time.perf_counter() - t0, 3)
    return res


# ----------------------------------------------------------------------------------------- table

def fmt_rate(r: Dict[str, Any]) -> str:
    s = r["sample"]
    if not s["runs"]:
        return "?"
    return f"{100 * s['failed'] / s['runs']:.1f}% ({s['failed']}/{s['runs']})"


def fmt_natural_first(r: Dict[str, Any]) -> str:
    n = r["natural_reruns_to_first_failure"]
    if n is None:
        return f"> {r['sample']['runs'] or NATURAL_N}"
    return f"{n:.1f}"


def fmt_ours_first(r: Dict[str, Any]) -> str:
    e = r["explore"]
    if e.get("failing_run"):
        return str(e["failing_run"])
    return f"none in {e.get('runs') or EXPLORE_N}"


def fmt_replay(r: Dict[str, Any]) -> str:
    rp = r["replay"]
    if not rp or rp.get("runs") is None:
        return "-"
    s = f"{rp['failed']}/{rp['runs']}"
    if rp.get("identical_traces") is False:
        s += " (traces differ)"
    if rp.get("token_from") == "investigate":
        s += " (inv token)"
    return s


def short_resource(resource: str) -> str:
    """`Event@bench/cases/test_x.py:17` -> `Event@:17`; a module prefix `test_x.STATE` -> `STATE`."""
    out = []
    for part in (resource or "").split(", "):
        if "@" in part:
            kind, _, where = part.partition("@")
            part = f"{kind}@:{where.rsplit(':', 1)[-1]}" if ":" in where else kind
        elif "." in part and part.split(".", 1)[0].startswith("test_"):
            part = part.split(".", 1)[1]
        out.append(part)
    return ", ".join(out)


def fmt_cause(r: Dict[str, Any]) -> str:
    inv = r["investigate"]
    exp = r["expected"] or {}
    cause = inv.get("cause") or {}
    got = f"{inv.get('verdict')}/{cause.get('kind') or '-'}"
    if cause.get("resource"):
        got += f" on {short_resource(cause['resource'])}"
    want = f"{exp.get('verdict')}/{exp.get('cause') or '-'}"
    if exp.get("resource"):
        res = exp["resource"]
        want += " on " + (res if isinstance(res, str) else "|".join(res))
    if r["matches"]:
        return f"ok {got}"
    return f"MISMATCH {got} (expected {want})" + (" [error]" if r["errors"] else "")


def fmt_fix(r: Dict[str, Any]) -> str:
    fix = r["investigate"].get("fix")
    if not fix or not fix.get("kind"):
        return "none"
    verdict = "verified" if fix.get("verified") else "NOT verified"
    passed = ",".join(fix.get("tiers_passed") or []) or "-"
    s = f"{fix['kind']} {verdict} [{passed}]"
    if fix.get("tiers_failed"):
        s += " failed:" + ",".join(fix["tiers_failed"])
    return s


def print_table(results: List[Dict[str, Any]], total_s: float) -> None:
    head = ("case", "description", "natural rate", "ours->1st", "natural->1st", "replay", "cause (verdict/kind)",
            "fix", "wall")
    rows = []
    for r in results:
        desc = r["description"]
        if len(desc) > 60:
            desc = desc[:57] + "..."
        rows.append((r["name"], desc, fmt_rate(r), fmt_ours_first(r), fmt_natural_first(r), fmt_replay(r),
                     fmt_cause(r), fmt_fix(r), f"{r['investigate']['wall_s']:.1f}/{r['wall_s']:.1f}s"))
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths))
    print(line.rstrip())
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    bad = [r["name"] for r in results if not r["matches"]]
    print(f"\n{len(results)} cases, {len(results) - len(bad)} match EXPECTED"
          + (f", mismatched: {', '.join(bad)}" if bad else "")
          + f"; total wall {total_s:.0f} s (wall column: investigate / whole case)")


# ------------------------------------------------------------------------------------------ main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", metavar="NAME", help="run only the cases whose file name contains NAME")
    ap.add_argument("--affidavit", metavar="PATH", help="the affidavit executable (default: beside this python)")
    args = ap.parse_args()
    afd = find_affidavit(args.affidavit)
    cases = discover(args.only)
    if not cases:
        print(f"corpus.py: no case matches {args.only!r}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    results = []
    for i, case in enumerate(cases, 1):
        print(f"[{i}/{len(cases)}] {case['name']} ...", file=sys.stderr, flush=True)
        try:
            r = run_case(afd, case)
        except Exception as e:  # a bug here, or an answer of a shape we did not expect: the case fails
            r = {k: case[k] for k in ("name", "file", "nodeid", "description", "expected")}
            r.update({"investigate": {"wall_s": 0.0, "verdict": None, "cause": None, "fix": None},
                      "sample": {"runs": 0, "failed": 0}, "natural_reruns_to_first_failure": None,
                      "explore": {}, "replay": None, "verdict_matches": False, "cause_matches": False,
                      "errors": [f"corpus.py: {type(e).__name__}: {e}"], "matches": False, "wall_s": 0.0})
        print(f"[{i}/{len(cases)}] {case['name']}: {fmt_cause(r)} ({r['wall_s']:.1f} s)", file=sys.stderr, flush=True)
        results.append(r)
    total = time.perf_counter() - t0

    entries = {r["name"]: r for r in results}
    if args.only and os.path.exists(RESULTS):
        try:
            with open(RESULTS, encoding="utf-8") as f:
                old = json.load(f)
            entries = {c["name"]: c for c in old.get("cases", [])} | entries
        except (OSError, ValueError, KeyError, TypeError):
            pass
    merged = [entries[k] for k in sorted(entries)]
    doc = {
        "engine": afd,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "settings": {"investigate": "--fix --natural 50", "sample": NATURAL_N, "explore_runs": EXPLORE_N,
                     "replays": REPLAY_N, "run_timeout_s": float(RUN_TIMEOUT)},
        "last_invocation": {"only": args.only, "cases": [r["name"] for r in results], "wall_s": round(total, 3)},
        "mismatches": [c["name"] for c in merged if not c.get("matches")],
        "cases": merged,
    }
    with open(RESULTS, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print_table(results, total)
    return 1 if any(not r["matches"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
