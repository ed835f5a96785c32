"""make bench: the corpus, the foundation's numbers and the peers, measured in one run.

0. The corpus (bench/corpus.py): every case in bench/cases/ through the whole engine -- natural
   failure rate, runs to the first failing schedule against natural reruns, replay k/10, the cause
   named against the expected one, the fix and the tiers it passed, wall time.
0a. Systematic search (bench/systematic.py): per example and corpus case, runs to the first failure
   for natural reruns, the random portfolio and `explore --strategy systematic`, raw schedules vs
   interleaving classes at K=1 and K=2; the two-window example under the portfolio's master seeds
   1..10 vs systematic (bench/systematic_results.json).
0b. The real-bugs corpus (bench/realbugs.py): every case in bench/realbugs/, buggy and fixed, through
   investigate and replay: cause kind, resource and await against the expected ones, the fix and its
   tiers, and issue 20's acceptance totals (bench/realbugs_results.json).
1. Isolated runs per second of a trivial async pytest test through the engine (one fork per run),
   next to `python -m pytest` re-invoked once per run on the same test (sequentially, and two at a
   time on two cores), and next to the engine with its workers' memory on 4 KB pages.
2. Where a run's time goes (bench/forkcost.py), with and without huge pages.
3. µs per hop on a 100-task asyncio.Queue token ring: the stock loop next to the controlled loop,
   and how often each polls its selector (a system call) per hop.

4. The peers (bench/peers.py, in build/bench-env, a Python >= 3.12 venv made by
   scripts/bench-env.sh): simloop's and simloom's cost per hop on the same ring and seeds/s, the
   false-alarm check (FIFO-correct controls under their random schedulers and under ours), and
   pytest-repeat and subprocess reruns on flaky cases.
5. Real suites (bench/suites.py, in build/bench-env/suites): the asyncio libraries it lists: their own test
   suites from their PyPI sdists, plain, with the plugin inactive and under --affidavit-explore=30:
   tests explored, not explored (why), red by verdict, wall time as ratios to plain.
6. CPython's own asyncio tests (bench/cpython_asyncio.py): every Python 3.10-3.13 the machine has, each
   module of its test.test_asyncio plain, under zero delays and under explore=30, every red listed
   (bench/cpython_asyncio_results.json).

Writes bench/results.json (with the machine it ran on), bench/corpus_results.json,
bench/systematic_results.json and bench/realbugs_results.json. Nothing here asserts: goals are compared and printed, not enforced.
`--skip-corpus`, `--skip-systematic`, `--skip-realbugs`, `--skip-peers`, `--skip-suites` and `--skip-cpython` leave those parts out (their
keys then say so).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Tuple

import foundation

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
AFFIDAVIT = os.path.join(BIN, "affidavit")
NODE = "bench/trivial/test_trivial.py::test_trivial"


def timed(cmd: List[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def engine_throughput(runs: int, reps: int = 3) -> Dict[str, Any]:
    """`affidavit sample` of the trivial test, `reps` times `runs` runs: throughput on this machine
    varies by about 20% from one invocation to the next, so every invocation is kept and the
    median is the figure quoted (the best is recorded next to it). Each invocation is paired with
    one whose workers keep their memory on ordinary pages (AFFIDAVIT_WORKER_HEAP=0, see
    src/runtime/hugeheap.c), run right after it, so the two medians compare under the same load."""
    small = min(timed([AFFIDAVIT, "sample", NODE, "-n", "2", "--json"]) for _ in range(3))
    subprocess.run([AFFIDAVIT, "sample", NODE, "-n", str(runs), "--json"], cwd=ROOT, check=True,
                   capture_output=True, text=True)  # warm the page cache and the interpreter's files
    totals: Dict[str, List[float]] = {"1": [], "0": []}
    for _ in range(reps):
        for heap in ("1", "0"):
            t0 = time.perf_counter()
            out = subprocess.run([AFFIDAVIT, "sample", NODE, "-n", str(runs), "--json"], cwd=ROOT,
                                 capture_output=True, text=True, env={**os.environ, "AFFIDAVIT_WORKER_HEAP": heap})
            totals[heap].append(time.perf_counter() - t0)
            data = json.loads(out.stdout)
            assert data["runs"] == runs and data["failed"] == 0, data

    def summary(ts: List[float]) -> Dict[str, Any]:
        total = sorted(ts)[len(ts) // 2]
        return {
            "total_s": total,
            "total_s_each": ts,
            "runs_per_s_end_to_end": runs / total,
            "runs_per_s_steady": (runs - 2) / max(total - small, 1e-9),
            "runs_per_s_end_to_end_each": [runs / t for t in ts],
            "runs_per_s_steady_best": (runs - 2) / max(min(ts) - small, 1e-9),
        }

    return {
        "runs": runs,
        "workers": os.cpu_count(),
        "invocations": reps,
        "startup_s": small,
        **summary(totals["1"]),
        "without_huge_pages": summary(totals["0"]),
    }


def reinvocation(runs: int, parallel: int) -> Dict[str, Any]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", NODE]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(parallel) as ex:
        list(ex.map(lambda _: timed(cmd), range(runs)))
    total = time.perf_counter() - t0
    return {"runs": runs, "parallel": parallel, "total_s": total, "runs_per_s": runs / total}


def ring(mode: str) -> Dict[str, Any]:
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ring.py"), mode, "20000"],
                         cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


INVESTIGATE = [
    "examples/test_lost_update.py::test_concurrent_deposits",
    "examples/test_taskgroup_read.py::test_report_is_finalized",
    "examples/test_event_flag.py::test_send_after_open",
    "examples/test_queue_drain.py::test_consumer_gets_everything",
    "examples/test_rare_flake.py::test_uses_fresh_token",
    "examples/test_annotated.py::test_report_is_finalized",
    "examples/test_window.py::test_reader_sees_write",
    "examples/test_deadlock.py::test_transfers_complete",
    "examples/test_lock_order.py::test_transfers_within_deadline",
    "examples/test_starvation.py::test_heartbeat_is_regular",
    "examples/test_multi_resource.py::test_fifty_requests",
]


def investigate_times(repeats: int = 3) -> Dict[str, Any]:
    """`affidavit investigate` end to end per example (wall time of the whole command, the median of
    `repeats` invocations), with the kind it named and the runs it spent."""
    rows = []
    for node in INVESTIGATE:
        walls, last = [], {}
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = subprocess.run([AFFIDAVIT, "investigate", node, "--json"], cwd=ROOT, capture_output=True, text=True)
            walls.append(time.perf_counter() - t0)
            last = json.loads(out.stdout) if out.stdout.strip() else {}
        walls.sort()
        rows.append({"nodeid": node, "median_s": walls[len(walls) // 2], "runs": last.get("runs"),
                     "verdict": last.get("verdict"), "kind": (last.get("cause") or {}).get("kind"),
                     "window_us": last.get("window_us")})
    meds = sorted(r["median_s"] for r in rows)
    return {"repeats": repeats, "examples": rows, "median_of_medians_s": meds[len(meds) // 2]}


def machine() -> Dict[str, Any]:
    """What the numbers were measured on."""
    info: Dict[str, Any] = {"platform": platform.platform(), "python": platform.python_version(),
                            "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            info["cpu"] = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), None)
        with open("/proc/meminfo", encoding="utf-8") as f:
            kb = next((int(l.split()[1]) for l in f if l.startswith("MemTotal:")), 0)
        info["memory_gib"] = round(kb / 2**20, 1)
        info["load_average_at_start"] = os.getloadavg()
    except OSError:
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    info["commit"] = commit.stdout.strip() or None
    info["state"] = foundation.machine_state()
    return info


def corpus() -> Dict[str, Any]:
    """bench/corpus.py (it prints its own table); the summary of bench/corpus_results.json."""
    t0 = time.perf_counter()
    rc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "corpus.py")], cwd=ROOT).returncode
    with open(os.path.join(ROOT, "bench", "corpus_results.json"), encoding="utf-8") as f:
        doc = json.load(f)
    cases = doc["cases"]
    firsts = []
    for c in cases:
        ours = (c.get("explore") or {}).get("failing_run")
        natural = c.get("natural_reruns_to_first_failure")
        if c["expected"]["verdict"] == "reproduced" and ours and natural:
            firsts.append(natural / ours)
    firsts.sort()
    return {"exit_code": rc, "wall_s": time.perf_counter() - t0, "cases": len(cases),
            "matching": sum(1 for c in cases if c.get("matches")), "mismatches": doc.get("mismatches", []),
            "fixes_verified": sum(1 for c in cases if ((c.get("investigate") or {}).get("fix") or {}).get("verified")),
            "median_natural_over_ours_runs_to_first_failure": firsts[len(firsts) // 2] if firsts else None,
            "results": "bench/corpus_results.json"}


def systematic() -> Dict[str, Any]:
    """bench/systematic.py (it prints its own table); the summary of bench/systematic_results.json."""
    t0 = time.perf_counter()
    rc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "systematic.py")], cwd=ROOT).returncode
    try:
        with open(os.path.join(ROOT, "bench", "systematic_results.json"), encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {"measured": False, "why": f"bench/systematic.py exited {rc} and wrote no results"}
    rows = doc.get("targets", [])
    tw = doc.get("two_windows") or {}
    return {"measured": True, "exit_code": rc, "wall_s": time.perf_counter() - t0, "targets": len(rows),
            "found_by_portfolio": sum(1 for r in rows if (r.get("portfolio") or {}).get("failing_run")),
            "found_by_systematic": sum(1 for r in rows if (r.get("systematic") or {}).get("failing_run")),
            "systematic_available": any((r.get("systematic") or {}).get("available") for r in rows),
            "two_windows_portfolio_missed": f"{tw.get('portfolio_missed')}/{len(tw.get('portfolio') or [])}"
            if tw else None,
            "two_windows_systematic_failing_run": (tw.get("systematic") or {}).get("failing_run") if tw else None,
            "frontrun": doc.get("frontrun"), "results": "bench/systematic_results.json"}


def realbugs() -> Dict[str, Any]:
    """bench/realbugs.py (it prints its own table); the totals of bench/realbugs_results.json."""
    t0 = time.perf_counter()
    rc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "realbugs.py")], cwd=ROOT).returncode
    try:
        with open(os.path.join(ROOT, "bench", "realbugs_results.json"), encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {"measured": False, "why": f"bench/realbugs.py exited {rc} and wrote no results"}
    return {"measured": True, "exit_code": rc, "wall_s": time.perf_counter() - t0, "totals": doc.get("totals"),
            "results": "bench/realbugs_results.json"}


def peers() -> Dict[str, Any]:
    """bench/peers.py in the bench environment, or why it was not run."""
    env = subprocess.run(["bash", os.path.join(ROOT, "scripts", "bench-env.sh")], cwd=ROOT, capture_output=True,
                         text=True)
    python = env.stdout.strip().splitlines()[-1] if env.stdout.strip() else ""
    if env.returncode != 0 or not python:
        return {"peers_measured": False, "why": (env.stderr.strip().splitlines() or ["bench-env failed"])[-1]}
    out = subprocess.run([python, os.path.join(ROOT, "bench", "peers.py"), "--affidavit", AFFIDAVIT,
                          "--controls-n", "300"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        return {"peers_measured": False, "why": (out.stderr.strip().splitlines() or ["peers.py failed"])[-1]}
    sys.stderr.write(out.stderr)
    return json.loads(out.stdout)


def suites() -> Dict[str, Any]:
    """bench/suites.py (it prints its own table): real libraries' suites under the plugin."""
    print("affidavit bench: real suites (bench/suites.py)", file=sys.stderr)
    rc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "suites.py"), "--affidavit", AFFIDAVIT],
                        cwd=ROOT).returncode
    if rc != 0:
        return {"measured": False, "why": f"bench/suites.py exited {rc}"}
    with open(os.path.join(ROOT, "bench", "suites_results.json"), encoding="utf-8") as f:
        data = json.load(f)
    return {"measured": True, "results": "bench/suites_results.json",
            "suites": {k: {key: v[key] for key in ("tests", "passed_plain", "explored", "red", "red_by_verdict",
                                                    "explore_over_plain", "inactive_over_plain")}
                       for k, v in data["suites"].items()}}


def cpython_asyncio() -> Dict[str, Any]:
    """bench/cpython_asyncio.py (it prints its own table): CPython's test_asyncio under the loop."""
    print("affidavit bench: CPython's own asyncio tests (bench/cpython_asyncio.py)", file=sys.stderr)
    rc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "cpython_asyncio.py")], cwd=ROOT).returncode
    if rc != 0:
        return {"measured": False, "why": f"bench/cpython_asyncio.py exited {rc}"}
    with open(os.path.join(ROOT, "bench", "cpython_asyncio_results.json"), encoding="utf-8") as f:
        rows = json.load(f)["rows"]
    present = [r for r in rows if "absent" not in r]
    return {"measured": True, "results": "bench/cpython_asyncio_results.json",
            "passed_plain": sum(r["passed_plain"] for r in present),
            "zero_pass": sum(r["zero_pass"] for r in present),
            "zero_red": sum(len(r["zero_red"]) + len(r["missing"]) for r in present),
            "not_explored": sum(sum(r["not_explored"].values()) for r in present),
            "explore_red": sum(len(r.get("explore_red", [])) for r in present)}


def main() -> None:
    skip_corpus = "--skip-corpus" in sys.argv[1:]
    skip_systematic = "--skip-systematic" in sys.argv[1:]
    skip_realbugs = "--skip-realbugs" in sys.argv[1:]
    skip_peers = "--skip-peers" in sys.argv[1:]
    skip_suites = "--skip-suites" in sys.argv[1:]
    skip_cpython = "--skip-cpython" in sys.argv[1:]
    t_start = time.perf_counter()
    where = machine()
    print("affidavit bench: corpus", file=sys.stderr)
    corp = {"skipped": True} if skip_corpus else corpus()
    print("affidavit bench: systematic search", file=sys.stderr)
    syst = {"measured": False, "why": "--skip-systematic"} if skip_systematic else systematic()
    print("affidavit bench: real bugs", file=sys.stderr)
    real = {"measured": False, "why": "--skip-realbugs"} if skip_realbugs else realbugs()
    print("affidavit bench: peers", file=sys.stderr)
    peer = {"peers_measured": False, "why": "--skip-peers"} if skip_peers else peers()
    suite = {"measured": False, "why": "--skip-suites"} if skip_suites else suites()
    cpy = {"measured": False, "why": "--skip-cpython"} if skip_cpython else cpython_asyncio()
    print("affidavit bench: foundation", file=sys.stderr)
    inv = investigate_times()
    eng = engine_throughput(3000)
    seq = reinvocation(20, 1)
    par = reinvocation(20, os.cpu_count() or 1)
    fork = json.loads(subprocess.run([sys.executable, os.path.join(ROOT, "bench", "forkcost.py"), NODE],
                                     cwd=ROOT, check=True, capture_output=True, text=True).stdout)
    fork["without_huge_pages"] = json.loads(subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "forkcost.py"), NODE], cwd=ROOT, check=True, capture_output=True,
        text=True, env={**os.environ, "AFFIDAVIT_WORKER_HEAP": "0"}).stdout)
    stock = min((ring("stock") for _ in range(3)), key=lambda r: r["us_per_hop"])
    ctl = min((ring("controlled") for _ in range(3)), key=lambda r: r["us_per_hop"])
    bare = min((ring("controlled-nohooks") for _ in range(3)), key=lambda r: r["us_per_hop"])
    traced = min((ring("controlled-traced") for _ in range(3)), key=lambda r: r["us_per_hop"])
    # every ratio quoted: the median and range of interleaved A/B pairs (foundation.py, pairs.py)
    pair = foundation.measure()
    where["state_after"] = foundation.machine_state()
    results = {
        "machine": where,
        "command": "make bench",
        "corpus": corp,
        "systematic": syst,
        "realbugs": real,
        "peers": peer,
        "suites": suite,
        "cpython_asyncio": cpy,
        "engine": eng,
        "pytest_reinvocation_sequential": seq,
        "pytest_reinvocation_parallel": par,
        "fork_cost": fork,
        "ring_stock": stock,
        "ring_controlled": ctl,
        "ring_controlled_nohooks": bare,
        "ring_controlled_traced": traced,
        "investigate": inv,
        "pairs": pair,
        # the medians of the pairs (the pairs, their ranges: "pairs")
        "ratios": {k: v["median"] for k, v in pair.items() if "median" in v},
    }
    results["headline"] = headline(results)
    results["wall_s"] = time.perf_counter() - t_start
    with open(os.path.join(ROOT, "bench", "results.json"), "w") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    st = where["state"]
    print(f"machine: {where.get('cpu')}, {where.get('cpus')} cpus; load {st['load']} at the start, "
          f"{where['state_after']['load']} at the end; transparent huge pages {st['thp']}")
    print("absolute figures below are this machine's, in that state; the ratios are medians of interleaved pairs\n")
    rows = foundation.rows(pair) + [
        ("isolated runs/s through the engine (steady, median)", f"{eng['runs_per_s_steady']:.0f}",
         f"absolute: best of {eng['invocations']}: {eng['runs_per_s_steady_best']:.0f}"),
        ("  end to end incl. startup, 3000 runs", f"{eng['runs_per_s_end_to_end']:.0f}",
         "each: " + ", ".join(f"{x:.0f}" for x in eng["runs_per_s_end_to_end_each"]) +
         f"; startup {eng['startup_s']:.2f} s"),
        ("  the same, worker memory on 4 KB pages (steady)", f"{eng['without_huge_pages']['runs_per_s_steady']:.0f}",
         "AFFIDAVIT_WORKER_HEAP=0, each invocation right after its pair; end to end each: " +
         ", ".join(f"{x:.0f}" for x in eng["without_huge_pages"]["runs_per_s_end_to_end_each"])),
        ("pytest re-invoked per run, 1 at a time", f"{seq['runs_per_s']:.1f}", ""),
        (f"pytest re-invoked per run, {par['parallel']} at a time", f"{par['runs_per_s']:.1f}", ""),
        ("fork + _exit in the warm worker", f"{fork['fork_exit']['wall_ms']:.2f} ms",
         f"{fork['fork_exit']['child_page_faults']:.0f} page faults; "
         f"{fork['worker_anon_huge_kb'] / 1024:.0f} MiB of the worker on huge pages"),
        ("  the same, worker memory on 4 KB pages", f"{fork['without_huge_pages']['fork_exit']['wall_ms']:.2f} ms",
         f"fork + run protocol {fork['without_huge_pages']['fork_protocol']['wall_ms']:.2f} ms"),
        ("fork + run protocol", f"{fork['fork_protocol']['wall_ms']:.2f} ms",
         f"{fork['fork_protocol']['child_page_faults']:.0f} page faults, "
         f"user {fork['fork_protocol']['child_user_ms']:.2f} + sys {fork['fork_protocol']['child_sys_ms']:.2f} ms"),
        ("  of which the run protocol, in the child", f"{fork['protocol_in_child_ms']:.2f} ms",
         f"worker RSS {fork['worker_rss_kb'] / 1024:.0f} MiB"),
        ("ring, stock loop", f"{stock['us_per_hop']:.2f} us/hop", f"{stock['selector_polls_per_hop']:.2f} polls/hop"),
        ("ring, controlled loop (loop + recorder, no hooks)", f"{bare['us_per_hop']:.2f} us/hop",
         f"{bare['selector_polls_per_hop']:.2f} polls/hop"),
        ("ring, controlled loop + queue hooks (a real run)", f"{ctl['us_per_hop']:.2f} us/hop",
         f"{ctl['selector_polls_per_hop']:.2f} polls/hop, "
         f"{ctl['recorded_sync_ops_per_hop']:.1f} recorded queue operations per hop"),
        ("ring, controlled loop + line tracer", f"{traced['us_per_hop']:.2f} us/hop",
         "every line of user code recorded, as in the runs investigate explains"),
    ]
    for row in inv["examples"]:
        name = row["nodeid"].split("::")[0].replace("examples/", "")
        rows.append((f"investigate {name}", f"{row['median_s']:.2f} s",
                     f"{row['runs']} runs, {row['kind'] or row['verdict']}"))
    rows.append(("investigate, median over the examples", f"{inv['median_of_medians_s']:.2f} s",
                 "goal <= 3 s on 2 cores"))
    rows.extend(systematic_rows(syst))
    rows.extend(peer_rows(results))
    w = max(len(a) for a, _, _ in rows)
    for a, b, c in rows:
        print(f"{a:<{w}}  {b:>16}  {c}")
    print(f"\nwritten: bench/results.json ({platform.python_version()}, {os.cpu_count()} cpus, "
          f"{results['wall_s'] / 60:.1f} min in all)")


def headline(r: Dict[str, Any]) -> Dict[str, Any]:
    """The ratios the README quotes, each from this run's measurements (None when not measured)."""
    h: Dict[str, Any] = {
        "engine_runs_per_s": r["engine"]["runs_per_s_steady"],
        "engine_over_pytest_reinvocation": r["ratios"].get("reinvocation_over_engine"),
        "ring_stock_over_controlled": r["ratios"].get("ring_stock_over_controlled"),
        "corpus_matching": f"{r['corpus'].get('matching')}/{r['corpus'].get('cases')}" if "cases" in r["corpus"] else None,
        "corpus_median_natural_over_ours_runs_to_first_failure":
            r["corpus"].get("median_natural_over_ours_runs_to_first_failure"),
        "realbugs_acceptance_met": (r["realbugs"].get("totals") or {}).get("acceptance_met"),
    }
    p = r["peers"]
    if p.get("peers_measured"):
        tot = p["false_alarms"]["totals"]
        for tool in ("simloop", "simloom", "affidavit"):
            h[f"false_alarms_{tool}"] = f"{tot[tool]['false_alarms']}/{tot[tool]['runs']}"
        ring = p["ring"]
        for tool in ("simloop", "simloom"):
            h[f"ring_{tool}_over_its_stock"] = ring[tool].get("over_stock")
        h["ring_affidavit_controlled_over_its_stock"] = ring["affidavit"].get("controlled_over_stock")
        rr = [c["pytest_repeat"]["runs_per_s"] for c in p["reruns"]["cases"].values() if c.get("pytest_repeat")]
        if rr:
            h["pytest_repeat_runs_per_s_median"] = sorted(rr)[len(rr) // 2]
            h["engine_over_pytest_repeat"] = r["engine"]["runs_per_s_steady"] / h["pytest_repeat_runs_per_s_median"]
    return h


def systematic_rows(s: Dict[str, Any]) -> List[Tuple[str, str, str]]:
    """bench/systematic.py's headline figures (its own table has the per-target rows)."""
    if not s.get("measured"):
        return [("systematic search", "not measured", str(s.get("why", "")))]
    return [
        ("targets failing under the portfolio / systematic", f"{s['found_by_portfolio']} / {s['found_by_systematic']}",
         f"of {s['targets']} examples and cases" + ("" if s["systematic_available"] else "; systematic n/a")),
        ("two-window example: portfolio seeds that missed", str(s["two_windows_portfolio_missed"]),
         "within 1000 runs each; systematic: " + (f"found at run {s['two_windows_systematic_failing_run']}"
                                                  if s["two_windows_systematic_failing_run"] else "did not find it")
         + ("" if s["systematic_available"] else " (n/a)")),
    ]


def peer_rows(r: Dict[str, Any]) -> List[Tuple[str, str, str]]:
    p = r["peers"]
    if not p.get("peers_measured"):
        return [("peers (simloop, simloom, pytest-repeat)", "not measured", str(p.get("why", "")))]
    rows: List[Tuple[str, str, str]] = []
    ring = p["ring"]
    py = p["interpreter"]["version"]
    rows.append((f"ring, stock loop (Python {py})", f"{ring['stock']['us_per_hop']:.2f} us/hop", "peers' reference"))
    for tool in ("simloop", "simloom"):
        rows.append((f"ring, {tool} {p['versions'][tool]}", f"{ring[tool]['us_per_hop']:.2f} us/hop",
                     f"{ring[tool]['over_stock']:.2f}x its stock loop (ours: "
                     f"{ring['affidavit']['controlled_over_stock']:.2f}x)"))
    for tool, v in p["seeds_per_s"]["peers"].items():
        rows.append((f"{tool} seeds/s on {p['seeds_per_s']['program']}", f"{v['seeds_per_s']:.0f}",
                     f"{v['failed']}/{v['seeds']} seeds failed"))
    tot = p["false_alarms"]["totals"]
    for tool in ("simloop", "simloom", "affidavit"):
        rows.append((f"false alarms on FIFO-correct controls, {tool}",
                     f"{tot[tool]['false_alarms']}/{tot[tool]['runs']}",
                     "failures stock asyncio cannot produce" + ("; goal 0" if tool == "affidavit" else "")))
    for node, c in p["reruns"]["cases"].items():
        name = node.split("::")[0].split("/")[-1]
        rep, sub, first = c.get("pytest_repeat") or {}, c.get("subprocess") or {}, c.get("pytest_repeat_x") or {}
        rows.append((f"reruns {name}", f"{rep.get('runs_per_s', 0):.0f} / {sub.get('runs_per_s', 0):.1f} runs/s",
                     f"pytest-repeat / subprocess; first failure at run {first.get('runs_to_first_failure')} / "
                     f"{sub.get('runs_to_first_failure')}"))
    return rows


if __name__ == "__main__":
    main()
