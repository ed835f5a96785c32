"""Systematic search against the random portfolio and natural reruns: runs to a first failure.

For every example in examples/ and every case in bench/cases/ (bench/corpus.py's cases), one after
the other (each engine call already uses every core):

1. natural reruns: `affidavit sample NODEID -n N --json`; the reruns to a first failure are
   estimated as 1/rate (runs / failed), or "> N" when none of the N failed;
2. the random portfolio: `affidavit explore NODEID --runs R --seed 1 --shard 1/1 --json` (one shard of
   one: the random schedules alone, without the systematic search explore ends with otherwise): the run at which
   the first failing schedule turned up (`failing_run`), or "none in R";
3. systematic search: `affidavit explore NODEID --strategy systematic --runs R --json`: its
   `failing_run`, and from its "systematic" block (issue 21's contract) the raw schedules and the
   distinct interleaving classes at K=1 and K=2 (`levels`), with whether each level was
   exhausted. When the command fails (an engine without the strategy), every systematic figure is
   "n/a" and the reason is recorded.

For the two-window example (examples/test_two_windows.py), the portfolio over master seeds 1..10,
each within 1000 runs, next to systematic search: how many seeds missed, and at which run each
seed that did find it found it.

frontrun (PyPI, pinned in bench/requirements-peers.txt, run in the bench env that
scripts/bench-env.sh makes, as bench/peers.py is) on the examples it can express: its program
model is a few worker coroutines interleaved at their awaits, an invariant checked after them.
- examples/test_lost_update.py: the two deposits as two workers, the balance as the invariant;
- examples/test_two_windows.py: the test body as one worker (its tasks are the body's own), its
  assertion as the invariant, under each of frontrun's clocks (real, virtual, explored).
For each: frontrun's executions to its first failure (`num_explored` of a failing result), or
that it found none within its bound. A failure it reports counts as realizable under stock
asyncio when the same test failed in this run's natural reruns (stock asyncio produced it);
otherwise "unknown".

Writes bench/systematic_results.json and prints one table. `--only NAME` runs the targets whose
file name contains NAME (their entries then replace the same targets' entries in an existing
results file); `--quick` uses small counts (natural 50, 200 schedules, seeds 1..3) whose figures
are a smoke test, not numbers to quote. The whole run takes about 10-15 minutes on 2 cores.
Nothing here asserts: figures are measured and printed.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
CASES = os.path.join(ROOT, "bench", "cases")
RESULTS = os.path.join(ROOT, "bench", "systematic_results.json")
TWO_WINDOWS = "examples/test_two_windows.py::test_client_gets_a_consistent_record"

FRONTRUN_MAX_EXECUTIONS = 1000
CALL_TIMEOUT = 300  # seconds for one engine call before it counts as failed
RUN_TIMEOUT = "5"  # per-run budget in seconds (every target runs well under 100 ms)


class Settings:
    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.natural_n = 50 if quick else 200
        self.explore_n = 200 if quick else 500
        self.seeds = [1, 2, 3] if quick else list(range(1, 11))
        self.two_windows_n = 300 if quick else 1000
        # the systematic search gets investigate's default budget (its --runs 3000): it needs 1712
        self.two_windows_sys_n = 2000 if quick else 3000

    def as_dict(self) -> Dict[str, Any]:
        return {"quick": self.quick, "natural_runs": self.natural_n, "explore_runs": self.explore_n,
                "two_windows_seeds": self.seeds, "two_windows_runs": self.two_windows_n,
                "two_windows_systematic_runs": self.two_windows_sys_n}


def find_affidavit(explicit: Optional[str]) -> str:
    for cand in (explicit, os.path.join(os.path.dirname(sys.executable), "affidavit"),
                 os.path.join(ROOT, ".venv", "bin", "affidavit")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    sys.exit("systematic.py: no affidavit executable (run it with .venv/bin/python, or pass --affidavit PATH)")


# --------------------------------------------------------------------------------------- targets

def first_test(path: str) -> Optional[str]:
    """The first test function of a pytest file, read without importing it."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    for node in tree.body:
        if isinstance(node, (ast.AsyncFunctionDef, ast.FunctionDef)) and node.name.startswith("test"):
            return node.name
    return None


def discover(only: Optional[str]) -> List[Dict[str, str]]:
    """Every example, then every case: {name, kind, nodeid}."""
    targets = []
    for kind, folder in (("example", EXAMPLES), ("case", CASES)):
        for f in sorted(os.listdir(folder)):
            if not (f.startswith("test_") and f.endswith(".py")) or (only and only not in f):
                continue
            test = first_test(os.path.join(folder, f))
            if test:
                rel = os.path.relpath(os.path.join(folder, f), ROOT)
                targets.append({"name": f"{kind}s/{f[5:-3]}", "kind": kind, "nodeid": f"{rel}::{test}"})
    return targets


# ---------------------------------------------------------------------------------------- engine

def engine(afd: str, args: List[str]) -> Tuple[Optional[Dict[str, Any]], float, int, str]:
    """One engine call from the repository root: (its JSON or None, wall seconds, exit code, stderr tail)."""
    t0 = time.perf_counter()
    try:
        out = subprocess.run([afd, *args, "--json", "--timeout", RUN_TIMEOUT], cwd=ROOT, capture_output=True,
                             text=True, timeout=CALL_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - t0, -1, f"no answer within {CALL_TIMEOUT} s"
    doc = None
    try:
        doc = json.loads(out.stdout) if out.stdout.strip() else None
    except json.JSONDecodeError:
        doc = None
    return doc if isinstance(doc, dict) else None, time.perf_counter() - t0, out.returncode, out.stderr.strip()[-400:]


def natural(afd: str, node: str, n: int) -> Dict[str, Any]:
    doc, wall, rc, err = engine(afd, ["sample", node, "-n", str(n)])
    if doc is None:
        return {"error": f"exit {rc}: {err}", "wall_s": round(wall, 3)}
    runs, failed = doc.get("runs") or 0, doc.get("failed") or 0
    return {"runs": runs, "failed": failed, "reruns_to_first_failure": runs / failed if failed else None,
            "wall_s": round(wall, 3)}


def portfolio(afd: str, node: str, runs: int, seed: int) -> Dict[str, Any]:
    # --shard 1/1: the random portfolio alone (unsharded, explore ends with the systematic search)
    doc, wall, rc, err = engine(afd, ["explore", node, "--runs", str(runs), "--seed", str(seed), "--shard", "1/1"])
    if doc is None:
        return {"seed": seed, "error": f"exit {rc}: {err}", "wall_s": round(wall, 3)}
    res = {"seed": seed, "found": doc.get("found"), "runs": doc.get("runs"), "failing_run": doc.get("failing_run"),
           "schedule": doc.get("schedule"), "wall_s": round(wall, 3)}
    for key in ("classes", "distinct_classes"):  # the portfolio's class count, where the engine reports one
        if key in doc:
            res["classes"] = doc[key]
    return res


def level(levels: List[Dict[str, Any]], k: int) -> Optional[Dict[str, Any]]:
    for lv in levels:
        if isinstance(lv, dict) and lv.get("delays") == k:
            return {key: lv.get(key) for key in ("schedules", "orders", "classes", "failed", "exhausted",
                                                 "estimated_total")}
    return None


def systematic(afd: str, node: str, runs: int) -> Dict[str, Any]:
    """explore --strategy systematic; {"available": False, "why": ...} when the engine cannot."""
    doc, wall, rc, err = engine(afd, ["explore", node, "--strategy", "systematic", "--runs", str(runs)])
    block = (doc or {}).get("systematic")
    if doc is None or not isinstance(block, dict) or rc not in (0, 1):
        why = f"exit {rc}: {err}" if doc is None or rc not in (0, 1) else "no \"systematic\" block in its JSON"
        return {"available": False, "why": why.splitlines()[-1] if why else why, "wall_s": round(wall, 3)}
    levels = block.get("levels") if isinstance(block.get("levels"), list) else []
    return {"available": True, "found": doc.get("found"), "runs": doc.get("runs"),
            "failing_run": doc.get("failing_run"), "schedule": doc.get("schedule"),
            "max_delays": block.get("max_delays"), "pruning": block.get("pruning"),
            "clock_reads": block.get("clock_reads"), "levels": levels, "k1": level(levels, 1),
            "k2": level(levels, 2), "wall_s": round(wall, 3)}


def run_target(afd: str, t: Dict[str, str], s: Settings) -> Dict[str, Any]:
    t0 = time.perf_counter()
    res: Dict[str, Any] = dict(t)
    res["natural"] = natural(afd, t["nodeid"], s.natural_n)
    res["portfolio"] = portfolio(afd, t["nodeid"], s.explore_n, 1)
    res["systematic"] = systematic(afd, t["nodeid"], s.explore_n)
    res["wall_s"] = round(time.perf_counter() - t0, 3)
    return res


def two_windows(afd: str, s: Settings) -> Dict[str, Any]:
    seeds = [portfolio(afd, TWO_WINDOWS, s.two_windows_n, seed) for seed in s.seeds]
    found = [p for p in seeds if p.get("failing_run")]
    return {"nodeid": TWO_WINDOWS, "runs_per_seed": s.two_windows_n, "portfolio": seeds,
            "portfolio_found": len(found), "portfolio_missed": len(seeds) - len(found),
            "systematic_runs": s.two_windows_sys_n, "systematic": systematic(afd, TWO_WINDOWS, s.two_windows_sys_n)}


# ----------------------------------------------------------------------------------------- table

def fmt_natural(n: Dict[str, Any]) -> str:
    if "error" in n:
        return "error"
    first = n.get("reruns_to_first_failure")
    return f"{first:.1f}" if first is not None else f"> {n.get('runs')}"


def fmt_first(p: Dict[str, Any], runs: int) -> str:
    if p.get("available") is False:
        return "n/a"
    if "error" in p:
        return "error"
    return str(p["failing_run"]) if p.get("failing_run") else f"none in {p.get('runs') or runs}"


def fmt_level(sy: Dict[str, Any], key: str) -> str:
    lv = sy.get(key) if sy.get("available") else None
    if not lv:
        return "n/a"
    return f"{lv.get('schedules')}/{lv.get('classes')}" + (" exh" if lv.get("exhausted") else "")


def fmt_class_rate(r: Dict[str, Any]) -> str:
    """Distinct interleaving classes per 1000 runs: the random portfolio's, then the systematic search's
    (its classes over every schedule it ran); n/a where a count is missing."""
    def rate(classes: Any, runs: Any) -> str:
        return f"{1000 * classes / runs:.0f}" if isinstance(classes, int) and runs else "n/a"
    p, sy = r.get("portfolio") or {}, r.get("systematic") or {}
    last = (sy.get("k2") or sy.get("k1") or {}) if sy.get("available") else {}
    return f"{rate(p.get('classes'), p.get('runs'))}/{rate(last.get('classes'), sy.get('runs'))}"


def print_table(doc: Dict[str, Any]) -> None:
    runs = doc["settings"]["explore_runs"]
    head = ("target", "natural 1st", "portfolio 1st", "systematic 1st", "K=1 sched/cls", "K=2 sched/cls",
            "cls/1000 runs rand/sys")
    rows = [head]
    for r in doc["targets"]:
        rows.append((r["name"], fmt_natural(r["natural"]), fmt_first(r["portfolio"], runs),
                     fmt_first(r["systematic"], runs), fmt_level(r["systematic"], "k1"),
                     fmt_level(r["systematic"], "k2"), fmt_class_rate(r)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    tw = doc.get("two_windows")
    if tw:
        firsts = ", ".join(f"seed {p['seed']}: {p.get('failing_run') or 'missed'}" for p in tw["portfolio"])
        print(f"\ntwo-window example, portfolio within {tw['runs_per_seed']} runs: missed by "
              f"{tw['portfolio_missed']} of {len(tw['portfolio'])} seeds ({firsts})")
        sys_n = tw.get("systematic_runs", tw["runs_per_seed"])
        print(f"two-window example, systematic within {sys_n} runs: {fmt_first(tw['systematic'], sys_n)}")
    fr = doc["frontrun"]
    if not fr.get("measured"):
        print(f"\nfrontrun: not measured: {fr.get('why')}")
        return
    print(f"\nfrontrun {fr['version']} (at most {fr['max_executions']} executions):")
    for p in fr["programs"]:
        got = p.get("error") or (f"failed after {p['executions_to_first_failure']} executions" if p.get("found")
                                  else f"no failure in {p.get('executions')} executions")
        print(f"  {p['nodeid']} (clock {p['clock']}): {got}" + (f"; realizable {p['realizable']}"
                                                                if p.get("realizable") else ""))


# ------------------------------------------------------------------------------------- frontrun

def load_example(stem: str) -> Any:
    """An example's module, imported with a no-op `affidavit.access` (the bench env has no affidavit)."""
    import importlib.util
    import types

    if "affidavit" not in sys.modules:
        stub = types.ModuleType("affidavit")
        stub.access = lambda *a, **k: None  # type: ignore[attr-defined]
        sys.modules["affidavit"] = stub
    spec = importlib.util.spec_from_file_location(f"frontrun_prog_{stem}", os.path.join(EXAMPLES, f"{stem}.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Outcome:
    """What a frontrun program's invariant reads: whether the body ran to its end without failing."""

    def __init__(self) -> None:
        self.failed = False


def frontrun_programs() -> List[Tuple[str, str, Any, Any, Any]]:
    """(nodeid, clock, setup, workers, invariant) for every program frontrun can express."""
    lost = load_example("test_lost_update")
    two = load_example("test_two_windows")

    def lost_setup() -> Any:
        lost.BALANCE["amount"] = 0
        return lost.BALANCE

    # frontrun takes a worker for a coroutine only when it is a coroutine function (a lambda
    # returning a coroutine would be run as a thread worker).
    async def deposit_10(b: Any) -> None:
        await lost.deposit(10)

    async def deposit_20(b: Any) -> None:
        await lost.deposit(20)

    async def two_body(o: Outcome) -> None:
        try:
            await two.test_client_gets_a_consistent_record()
        except AssertionError:
            o.failed = True

    progs: List[Tuple[str, str, Any, Any, Any]] = [
        ("examples/test_lost_update.py::test_concurrent_deposits", "real", lost_setup,
         [deposit_10, deposit_20], lambda b: b["amount"] == 30)]
    for clock in ("real", "virtual", "explored"):
        progs.append((TWO_WINDOWS, clock, Outcome, [two_body], lambda o: not o.failed))
    return progs


def frontrun_driver() -> int:
    """Runs in the bench env: every frontrun program, one JSON document on stdout."""
    import asyncio
    import importlib.metadata

    import frontrun

    async def one(nodeid: str, clock: str, setup: Any, workers: Any, invariant: Any) -> Dict[str, Any]:
        t0 = time.perf_counter()
        try:
            res = await frontrun.explore(setup=setup, workers=workers, invariant=invariant, clock=clock,
                                         max_executions=FRONTRUN_MAX_EXECUTIONS)
        except Exception as exc:  # a program frontrun refuses is reported, not fatal
            return {"nodeid": nodeid, "clock": clock, "error": f"{type(exc).__name__}: {exc}"[:300]}
        found = not res.property_holds
        return {"nodeid": nodeid, "clock": clock, "found": found, "executions": res.num_explored,
                "executions_to_first_failure": res.num_explored if found else None,
                "exhausted": getattr(res, "exhausted", None), "wall_s": round(time.perf_counter() - t0, 3)}

    async def run_all() -> List[Dict[str, Any]]:
        return [await one(*p) for p in frontrun_programs()]

    rows = asyncio.run(run_all())
    print(json.dumps({"measured": True, "version": importlib.metadata.version("frontrun"),
                      "max_executions": FRONTRUN_MAX_EXECUTIONS, "programs": rows}))
    return 0


def frontrun_peer(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """frontrun in the bench env, with each failure it found judged against this run's natural reruns."""
    env = subprocess.run(["bash", os.path.join(ROOT, "scripts", "bench-env.sh")], cwd=ROOT, capture_output=True,
                         text=True)
    python = env.stdout.strip().splitlines()[-1] if env.stdout.strip() else ""
    if env.returncode != 0 or not python:
        return {"measured": False, "why": (env.stderr.strip().splitlines() or ["bench-env failed"])[-1]}
    try:
        out = subprocess.run([python, os.path.abspath(__file__), "--frontrun-driver"], cwd=ROOT, capture_output=True,
                             text=True, timeout=CALL_TIMEOUT)
        doc = json.loads(out.stdout)
    except (subprocess.TimeoutExpired, ValueError) as exc:
        return {"measured": False, "why": f"the frontrun driver failed: {type(exc).__name__}"}
    natural_of = {r["nodeid"]: r.get("natural") or {} for r in rows}
    for p in doc.get("programs", []):
        nat = natural_of.get(p["nodeid"])
        if not p.get("found"):
            p["realizable"] = None
        elif nat and nat.get("failed"):
            p["realizable"] = f"yes: stock asyncio failed the same test in {nat['failed']}/{nat['runs']} natural runs"
        else:
            p["realizable"] = "unknown: no natural run of this bench failed it"
    return doc


def merge(doc: Dict[str, Any], only: str) -> Dict[str, Any]:
    """With --only, the new entries replace the same targets' entries of an existing results file."""
    try:
        with open(RESULTS, encoding="utf-8") as f:
            old = json.load(f)
    except (OSError, ValueError):
        return doc
    fresh = {r["nodeid"] for r in doc["targets"]}
    kept = [r for r in old.get("targets", []) if r.get("nodeid") not in fresh]
    doc["targets"] = sorted(kept + doc["targets"], key=lambda r: (r["kind"] != "example", r["name"]))
    if "two_windows" not in doc and "two_windows" in old:
        doc["two_windows"] = old["two_windows"]
    return doc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="only the targets whose file name contains this")
    ap.add_argument("--quick", action="store_true", help="small counts: a smoke test, not figures to quote")
    ap.add_argument("--affidavit", help="the engine (default: the one beside this interpreter, or .venv's)")
    ap.add_argument("--skip-frontrun", action="store_true", help="leave frontrun out")
    ap.add_argument("--frontrun-driver", action="store_true", help=argparse.SUPPRESS)  # in the bench env only
    args = ap.parse_args()
    if args.frontrun_driver:
        return frontrun_driver()
    afd = find_affidavit(args.affidavit)
    s = Settings(args.quick)
    t0 = time.perf_counter()
    targets = discover(args.only)
    if not targets:
        print(f"systematic.py: no example or case matches --only {args.only}", file=sys.stderr)
        return 2
    rows = []
    for t in targets:
        print(f"systematic: {t['name']}", file=sys.stderr)
        rows.append(run_target(afd, t, s))
    doc: Dict[str, Any] = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                       "platform": platform.platform()},
                           "settings": s.as_dict(), "targets": rows}
    if any(t["nodeid"] == TWO_WINDOWS for t in targets):
        print("systematic: two-window example, portfolio seeds", file=sys.stderr)
        doc["two_windows"] = two_windows(afd, s)
    if args.only:
        doc = merge(doc, args.only)
    print("systematic: frontrun (bench env)", file=sys.stderr)
    doc["frontrun"] = {"measured": False, "why": "--skip-frontrun"} if args.skip_frontrun else frontrun_peer(doc["targets"])
    doc["wall_s"] = round(time.perf_counter() - t0, 1)
    with open(RESULTS, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print_table(doc)
    print(f"\nwritten: bench/systematic_results.json ({doc['wall_s'] / 60:.1f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
