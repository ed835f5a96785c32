"""The peer tools, measured on this machine in one run, next to affidavit on the same programs.

Usage (the bench env is made by scripts/bench-env.sh; simloop and simloom need Python >= 3.12):

    build/bench-env/bin/python bench/peers.py [--quick] [--affidavit PATH]

Prints one JSON document on stdout and a short table on stderr. Every number in either comes from
runs executed and counted during this invocation; a figure that could not be measured is reported
as {"not_measured": "why"}, never estimated. `--quick` is a smoke mode with small counts whose
figures are too noisy to quote. `--affidavit` is the main project's executable (default
.venv/bin/affidavit under the repository root); its interpreter (the `python` beside it) runs
bench/ring.py for our ring figures.

What is measured, and how the programs are made equivalent
----------------------------------------------------------
simloop and simloom have no pytest-node entry point comparable to `affidavit explore NODEID`: they
run a coroutine function on their own loop, one seed per run. So every program below is an async
pytest test function (the cases in bench/cases/, the controls in bench/peers_programs/), and
this script imports its module and calls the very same test function to get a fresh coroutine per
seed (`pytest.mark.asyncio` leaves the function unchanged), while affidavit runs the same function
as a pytest node. Per seed:

* simloop: `simloop.explore(fn, [seed])` -- the explorer's own per-seed path (a fresh
  `SimLoop(seed)`, the run, teardown); a returned SeedReport is a reported failure. Its default
  policy draws the next handle uniformly from the whole ready queue.
* simloom: `simloom.run(fn, seed=seed, raise_on_error=False, virtual_time=True,
  seed_randomness=True)` -- what `simloom.explore` calls per seed, with the two settings
  `@simloom.test` turns on by default; a RunResult with an error is a reported failure. Its default
  scheduler (random walk) also picks uniformly among all ready handles.

1. ring: us per hop of the 100-task token ring through asyncio.Queue, 20,000 hops: the `ring()`
   coroutine imported from bench/ring.py itself (not a copy), run under simloop's loop
   (`SimLoop(seed=1)`, run_until_complete), under simloom's (`simloom.run`, seed 1, real clock so
   the program's own perf_counter timing stays real), and under the stock loop of the same
   interpreter; best of 5 fresh loops, each configuration in its own process, as bench/ring.py
   does. The scheduler steps each peer ran are counted from its own record (simloop's trace
   "run" events, simloom's event-log "step" events), giving us per step too. Ours: bench/ring.py
   `stock` and `controlled` run by the main project's interpreter (a different Python version:
   both are recorded, so compare ratios to each interpreter's own stock loop).
2. seeds_per_s: whole runs of bench/cases/test_lost_update.py::test_two_reservations per second
   under each peer (seeds 0..N-1, one at a time as above), with how many of those seeds failed.
3. false_alarms: each control, correct under stock asyncio, run under each peer for N seeds
   (0..N-1); every seed reported failing is a false alarm, because stock asyncio can never fail
   these programs. Four depend on asyncio's FIFO ready queue (bench/cases/test_control_fifo.py
   and three programs in bench/peers_programs/); three are correct under any order of the ready
   queue (they check the peers are otherwise sound). The same programs go through
   `affidavit explore NODEID --strategy portfolio --runs N --json`; its runs whose outcome is not
   pass are counted the same way (explore stops at its first failing run, so a nonzero count means
   "at least that many").
4. reruns: flaky cases rerun with the stock loop, in the bench env's pytest, from the repository
   root (its pyproject.toml sets asyncio_default_fixture_loop_scope; the bench env has no
   affidavit, and the peers' own pytest plugins are disabled with -p no:simloop -p no:simloom):
   - pytest-repeat: `pytest --count CAP -x` in one process; the run at which the first failure
     came ("> CAP" when none did) and runs/s over the runs it executed; then `pytest --count M`
     without -x for a steady runs/s over M runs, with the failures among them counted.
   - subprocess reruns: `python -m pytest NODE` re-invoked per run, one at a time, until the
     first failure (at most CAP runs, and at least MIN so that runs/s has a few runs behind it).
   Wall times are whole processes (interpreter start and collection included); pytest's own
   session time is recorded next to them.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
SEED = 1  # the fixed seed of the ring runs

# (node id, fifo-dependent): correct under stock asyncio, every one of them.
CONTROLS = [
    ("bench/cases/test_control_fifo.py::test_fifo_order", True),
    ("bench/peers_programs/test_soundness_call_soon.py::test_audit_sees_deposit", True),
    ("bench/peers_programs/test_soundness_alternation.py::test_sleep0_alternates", True),
    ("bench/peers_programs/test_soundness_awaited_writer.py::test_reader_awaits_writer", False),
    ("bench/cases/test_control_awaited.py::test_index_is_built", False),
    ("bench/cases/test_control_locked.py::test_locked_deposits", False),
]
SEEDS_PROGRAM = "bench/cases/test_lost_update.py::test_two_reservations"
FLAKY = [
    "bench/cases/test_lost_update.py::test_two_reservations",
    "bench/cases/test_read_before_write.py::test_settings_are_loaded",
    "bench/cases/test_rare_flake.py::test_welcome_mail_names_user",
]
PYTEST_ARGS = ["-q", "-p", "no:cacheprovider", "-p", "no:simloop", "-p", "no:simloom", "-rf"]

FULL = {"hops": 20000, "ring_repeats": 5, "seeds": 1000, "false_alarm_n": 500, "repeat_cap": 500,
        "repeat_steady": 200, "subprocess_cap": 50, "subprocess_min": 10}
QUICK = {"hops": 2000, "ring_repeats": 1, "seeds": 30, "false_alarm_n": 20, "repeat_cap": 20,
         "repeat_steady": 10, "subprocess_cap": 3, "subprocess_min": 2}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def version(dist: str) -> Optional[str]:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def load_test(nodeid: str) -> Callable[[], Any]:
    """The async test function a node id names, from its module imported under a private name."""
    path, func = nodeid.split("::")
    name = "peers_prog_" + re.sub(r"\W", "_", path)
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
        assert spec and spec.loader
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return getattr(mod, func)


# ------------------------------------------------------------------------------- one seed, per peer

def simloop_seed(fn: Callable[[], Any], seed: int) -> Optional[BaseException]:
    import simloop

    report = simloop.explore(fn, [seed])
    return None if report is None else report.exception


def simloom_seed(fn: Callable[[], Any], seed: int) -> Optional[BaseException]:
    import simloom

    result = simloom.run(fn, seed=seed, raise_on_error=False, virtual_time=True, seed_randomness=True)
    return result.error


PEERS = {"simloop": simloop_seed, "simloom": simloom_seed}


def where(exc: BaseException) -> str:
    """' at FILE:LINE' of the innermost frame of the failure (a bare assert has no message here:
    the modules are imported without pytest's assertion rewriting)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else ""


def seeds_under(peer: str, nodeid: str, n: int) -> Dict[str, Any]:
    fn = load_test(nodeid)
    run = PEERS[peer]
    by_failure: Dict[str, int] = {}
    first_seed, first_msg = None, None
    t0 = time.perf_counter()
    for seed in range(n):
        exc = run(fn, seed)
        if exc is not None:
            kind = type(exc).__name__ + where(exc)
            by_failure[kind] = by_failure.get(kind, 0) + 1
            if first_seed is None:
                first_seed, first_msg = seed, (kind + (f": {str(exc).splitlines()[0]}" if str(exc) else ""))[:200]
    wall = time.perf_counter() - t0
    failed = sum(by_failure.values())
    return {"seeds": n, "failed": failed, "by_failure": by_failure, "first_failing_seed": first_seed,
            "first_failure": first_msg, "wall_s": wall, "seeds_per_s": n / wall}


# ------------------------------------------------------------------------------------------ ring

def ring_child(mode: str, hops: int, repeats: int) -> None:
    """One ring configuration in this process; prints one JSON line."""
    import asyncio

    sys.path.insert(0, BENCH)
    from ring import TASKS, ring  # bench/ring.py's own program

    best, steps = None, None
    for _ in range(repeats):
        if mode == "stock":
            loop = asyncio.new_event_loop()
            try:
                secs = loop.run_until_complete(ring(hops))
            finally:
                loop.close()
            n_steps = None
        elif mode == "simloop":
            import simloop

            loop = simloop.SimLoop(SEED)
            try:
                secs = loop.run_until_complete(ring(hops))
            finally:
                loop.close()
            n_steps = sum(1 for e in loop.trace if e.kind == "run")
        elif mode == "simloom":
            import simloom

            result = simloom.run(lambda: ring(hops), seed=SEED)
            secs = result.value
            n_steps = sum(1 for e in result.log.events if e.get("kind") == "step")
        else:
            raise SystemExit(f"unknown ring mode {mode}")
        if best is None or secs < best:
            best, steps = secs, n_steps
    assert best is not None
    out: Dict[str, Any] = {"mode": mode, "tasks": TASKS, "hops": hops, "repeats": repeats,
                           "us_per_hop": best / hops * 1e6}
    if mode != "stock":
        out.update({"seed": SEED, "steps": steps, "steps_per_hop": steps / hops,
                    "us_per_step": best / steps * 1e6 if steps else None})
    print(json.dumps(out))


def ring_in_process(python: str, args: List[str]) -> Dict[str, Any]:
    out = subprocess.run([python] + args, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return {"not_measured": f"exit {out.returncode}: {out.stderr.strip().splitlines()[-1:]}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def ring_all(cfg: Dict[str, int], affidavit: Optional[str]) -> Dict[str, Any]:
    me = os.path.abspath(__file__)
    res: Dict[str, Any] = {}
    for mode in ("stock", "simloop", "simloom"):
        res[mode] = ring_in_process(sys.executable, [me, "--ring-child", mode, "--hops", str(cfg["hops"]),
                                                     "--repeats", str(cfg["ring_repeats"])])
    ours: Dict[str, Any] = {}
    py = os.path.join(os.path.dirname(affidavit), "python") if affidavit else None
    if py and os.path.isfile(py):
        pyver = subprocess.run([py, "-c", "import platform; print(platform.python_version())"],
                               capture_output=True, text=True).stdout.strip()
        ours["python"] = pyver
        for mode in ("stock", "controlled"):
            # bench/ring.py's best of its own 5 loops, in that interpreter
            ours[mode] = ring_in_process(py, [os.path.join(BENCH, "ring.py"), mode, str(cfg["hops"])])
    else:
        ours["not_measured"] = f"no interpreter beside {affidavit!r}"
    res["affidavit"] = ours
    stock = res["stock"].get("us_per_hop")
    for mode in ("simloop", "simloom"):
        if stock and "us_per_hop" in res[mode]:
            res[mode]["over_stock"] = res[mode]["us_per_hop"] / stock
    if "controlled" in ours and "us_per_hop" in ours.get("controlled", {}) and "us_per_hop" in ours.get("stock", {}):
        ours["controlled_over_stock"] = ours["controlled"]["us_per_hop"] / ours["stock"]["us_per_hop"]
    return res


# ------------------------------------------------------------------------------------ our engine

def affidavit_explore(affidavit: str, nodeid: str, runs: int) -> Dict[str, Any]:
    cmd = [affidavit, "explore", nodeid, "--strategy", "portfolio", "--runs", str(runs), "--json"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    if out.returncode not in (0, 1) or not out.stdout.strip():
        return {"not_measured": f"affidavit explore exit {out.returncode}: {out.stderr.strip()[-300:]}"}
    data = json.loads(out.stdout)
    outcomes = data.get("outcomes", {})
    bad = sum(v for k, v in outcomes.items() if k not in ("pass", "skip"))
    return {"requested_runs": runs, "runs": data.get("runs"), "failed": bad, "outcomes": outcomes,
            "found": data.get("found"), "first_failure": data.get("failure"), "wall_s": wall,
            "runs_per_s": (data.get("runs") or 0) / wall}


# --------------------------------------------------------------------------------------- reruns

SUMMARY = re.compile(r"(\d+) (failed|passed|error|errors)\b")
SESSION = re.compile(r" in ([0-9.]+)s")


def pytest_outcome(text: str) -> Dict[str, Any]:
    last = [line for line in text.splitlines() if line.strip()][-1:] or [""]
    counts = {"failed": 0, "passed": 0, "errors": 0}
    for num, word in SUMMARY.findall(last[0]):
        counts["errors" if word.startswith("error") else word] += int(num)
    m = SESSION.search(last[0])
    counts["session_s"] = float(m.group(1)) if m else None
    return counts


def pytest_repeat(nodeid: str, count: int, stop_first: bool) -> Dict[str, Any]:
    cmd = [sys.executable, "-m", "pytest"] + PYTEST_ARGS + ["--count", str(count)]
    cmd += ["-x"] if stop_first else []
    t0 = time.perf_counter()
    out = subprocess.run(cmd + [nodeid], cwd=ROOT, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    res = pytest_outcome(out.stdout)
    executed = res["failed"] + res["passed"]
    if executed == 0 or res["errors"]:
        return {"not_measured": f"pytest exit {out.returncode}: {out.stdout.strip()[-300:]}"}
    firsts = [int(i) for i in re.findall(r"^FAILED \S+\[(\d+)-\d+\]", out.stdout, re.M)]
    entry: Dict[str, Any] = {"count": count, "runs": executed, "failed": res["failed"], "wall_s": wall,
                             "session_s": res["session_s"], "runs_per_s": executed / wall}
    if stop_first:
        entry["cap"] = count
        entry["runs_to_first_failure"] = min(firsts) if firsts else f"> {count}"
    return entry


def subprocess_reruns(nodeid: str, cap: int, minimum: int) -> Dict[str, Any]:
    cmd = [sys.executable, "-m", "pytest"] + PYTEST_ARGS + [nodeid]
    first, runs, failed = None, 0, 0
    t0 = time.perf_counter()
    while runs < cap and (first is None or runs < minimum):
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
        runs += 1
        if out.returncode == 1:
            failed += 1
            if first is None:
                first = runs
        elif out.returncode != 0:
            return {"not_measured": f"pytest exit {out.returncode}: {out.stdout.strip()[-300:]}"}
    wall = time.perf_counter() - t0
    return {"cap": cap, "runs": runs, "failed": failed, "wall_s": wall, "runs_per_s": runs / wall,
            "runs_to_first_failure": first if first is not None else f"> {cap}"}


# ------------------------------------------------------------------------------------------ main

def fmt(v: Any, spec: str = ".1f") -> str:
    return format(v, spec) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def first_failure(r: Dict[str, Any]) -> str:
    first = r["runs_to_first_failure"]
    if isinstance(first, str):
        return f"no failure in {r['runs']} runs (first failure {first})"
    return f"first failure at run {first} ({r['runs']} runs)"


def table(doc: Dict[str, Any]) -> None:
    rows = []
    ring = doc["ring"]
    for mode in ("stock", "simloop", "simloom"):
        r = ring[mode]
        extra = ""
        if "steps_per_hop" in r:
            extra = f"{r['steps_per_hop']:.2f} steps/hop, {r['us_per_step']:.2f} us/step, {r['over_stock']:.2f}x stock"
        rows.append((f"ring, {mode} (py {doc['interpreter']['version']})",
                     f"{fmt(r.get('us_per_hop'), '.2f')} us/hop" if "us_per_hop" in r else r["not_measured"], extra))
    ours = ring["affidavit"]
    for mode in ("stock", "controlled"):
        if mode in ours and "us_per_hop" in ours[mode]:
            extra = f"{ours['controlled_over_stock']:.2f}x stock" if mode == "controlled" and "controlled_over_stock" in ours else ""
            rows.append((f"ring, affidavit {mode} (py {ours['python']})", f"{ours[mode]['us_per_hop']:.2f} us/hop", extra))
    for peer, r in doc["seeds_per_s"]["peers"].items():
        rows.append((f"seeds/s, {peer}, lost update", f"{r['seeds_per_s']:.0f}",
                     f"{r['failed']}/{r['seeds']} seeds failed, first at seed {r['first_failing_seed']}"))
    for ctl in doc["false_alarms"]["programs"]:
        name = ctl["nodeid"].split("::")[0].split("/")[-1]
        tag = "FIFO" if ctl["fifo_dependent"] else "any order"
        for tool in ("simloop", "simloom", "affidavit"):
            r = ctl[tool]
            if "not_measured" in r:
                rows.append((f"false alarms, {tool}, {name}", "not measured", r["not_measured"][:60]))
                continue
            n = r.get("seeds", r.get("runs"))
            rows.append((f"false alarms, {tool}, {name}", f"{r['failed']}/{n}",
                         f"{tag}; {r['wall_s']:.1f} s"))
    for node, r in doc["reruns"]["cases"].items():
        name = node.split("::")[0].split("/")[-1]
        rep, steady, sub = r["pytest_repeat_x"], r["pytest_repeat"], r["subprocess"]
        for label, r in (("pytest-repeat -x", rep), ("pytest-repeat", steady), ("subprocess reruns", sub)):
            if "not_measured" in r:
                rows.append((f"{label}, {name}", "not measured", r["not_measured"][:60]))
        if "not_measured" not in rep:
            rows.append((f"pytest-repeat -x, {name}", f"{rep['runs_per_s']:.0f} runs/s",
                         first_failure(rep)))
        if "not_measured" not in steady:
            rows.append((f"pytest-repeat, {name}", f"{steady['runs_per_s']:.0f} runs/s",
                         f"{steady['failed']}/{steady['runs']} failed"))
        if "not_measured" not in sub:
            rows.append((f"subprocess reruns, {name}", f"{sub['runs_per_s']:.2f} runs/s", first_failure(sub)))
    rows.append(("peers bench wall time", f"{doc['wall_s']:.1f} s", "quick mode" if doc["quick"] else ""))
    w = max(len(a) for a, _, _ in rows)
    for a, b, c in rows:
        log(f"{a:<{w}}  {b:>16}  {c}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke mode: small counts")
    ap.add_argument("--affidavit", default=os.path.join(ROOT, ".venv", "bin", "affidavit"),
                    help="the main project's affidavit executable")
    ap.add_argument("--controls-n", type=int, default=None,
                    help="seeds (peers) and runs (affidavit) per control in the false-alarm check "
                         f"(default {FULL['false_alarm_n']}, --quick {QUICK['false_alarm_n']})")
    ap.add_argument("--ring-child", help=argparse.SUPPRESS)
    ap.add_argument("--hops", type=int, default=20000, help=argparse.SUPPRESS)
    ap.add_argument("--repeats", type=int, default=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ring_child:
        ring_child(args.ring_child, args.hops, args.repeats)
        return
    if sys.version_info < (3, 12):
        sys.exit("peers.py: simloop and simloom need Python >= 3.12 (run it with build/bench-env/bin/python)")
    cfg = dict(QUICK if args.quick else FULL)
    if args.controls_n is not None:
        if args.controls_n < 1:
            ap.error("--controls-n must be at least 1")
        cfg["false_alarm_n"] = args.controls_n
    affidavit = os.path.abspath(args.affidavit) if args.affidavit else None
    if affidavit and not (os.path.isfile(affidavit) and os.access(affidavit, os.X_OK)):
        log(f"peers.py: no affidavit executable at {affidavit}: our side is not measured")
        affidavit = None
    t_start = time.perf_counter()
    walls: Dict[str, float] = {}

    log("peers: ring")
    t0 = time.perf_counter()
    ring = ring_all(cfg, affidavit)
    walls["ring"] = time.perf_counter() - t0

    log("peers: seeds/s")
    t0 = time.perf_counter()
    seeds = {"program": SEEDS_PROGRAM,
             "peers": {p: seeds_under(p, SEEDS_PROGRAM, cfg["seeds"]) for p in PEERS}}
    walls["seeds_per_s"] = time.perf_counter() - t0

    log("peers: false alarms")
    t0 = time.perf_counter()
    programs = []
    for nodeid, fifo in CONTROLS:
        entry: Dict[str, Any] = {"nodeid": nodeid, "fifo_dependent": fifo}
        for peer in PEERS:
            entry[peer] = seeds_under(peer, nodeid, cfg["false_alarm_n"])
        entry["affidavit"] = (affidavit_explore(affidavit, nodeid, cfg["false_alarm_n"]) if affidavit
                              else {"not_measured": "no affidavit executable"})
        programs.append(entry)
    totals: Dict[str, Any] = {}
    for tool in ("simloop", "simloom", "affidavit"):
        done = [p[tool] for p in programs if "not_measured" not in p[tool]]
        totals[tool] = {
            "false_alarms": sum(r["failed"] for r in done),
            "runs": sum(r.get("seeds", r.get("runs")) or 0 for r in done),
            "false_alarms_fifo_dependent": sum(p[tool]["failed"] for p in programs
                                               if p["fifo_dependent"] and "not_measured" not in p[tool]),
            "programs_measured": len(done),
        }
    false_alarms = {"seeds_or_runs_per_program": cfg["false_alarm_n"], "programs": programs, "totals": totals}
    walls["false_alarms"] = time.perf_counter() - t0

    log("peers: reruns")
    t0 = time.perf_counter()
    cases = {}
    for nodeid in FLAKY:
        cases[nodeid] = {
            "pytest_repeat_x": pytest_repeat(nodeid, cfg["repeat_cap"], True),
            "pytest_repeat": pytest_repeat(nodeid, cfg["repeat_steady"], False),
            "subprocess": subprocess_reruns(nodeid, cfg["subprocess_cap"], cfg["subprocess_min"]),
        }
    reruns = {"cwd": ROOT, "pytest_args": PYTEST_ARGS, "cases": cases}
    walls["reruns"] = time.perf_counter() - t0

    doc = {
        "peers_measured": True,
        "quick": args.quick,
        "config": cfg,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "interpreter": {"path": sys.executable, "version": platform.python_version(),
                        "implementation": platform.python_implementation()},
        "versions": {d: version(d) for d in ("simloop", "simloom", "pytest-repeat", "pytest", "pytest-asyncio")},
        "affidavit": affidavit,
        "ring": ring,
        "seeds_per_s": seeds,
        "false_alarms": false_alarms,
        "reruns": reruns,
        "section_wall_s": walls,
        "wall_s": time.perf_counter() - t_start,
    }
    table(doc)
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
