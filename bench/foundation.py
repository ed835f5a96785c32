"""The ratios `make bench` quotes for the engine itself, each from interleaved A/B pairs (pairs.py).

  ring_stock_over_controlled      us per hop of bench/ring.py, stock loop / controlled loop (queue hooks)
  ring_stock_over_nohooks         the same against the controlled loop without the queue hooks
  ring_traced_over_untraced       controlled loop with the line tracer / without
  plugin_inactive_over_plain      pytest on 400 sync tests with the plugin installed / -p no:affidavit
  reinvocation_over_engine        a run's cost: `python -m pytest NODE` re-invoked (as many at a time
                                  as there are cores) / one run through the engine's warm pool
  engine_over_pytest_repeat       a run's cost: the engine's isolated run / pytest-repeat's in-process
                                  rerun (no isolation: module state carries over)
  run_over_fork_exit              in the warm worker: fork + the run protocol / bare fork + _exit

A run's cost through the engine is its steady cost, (T(n) - T(2)) / (n - 2) for `affidavit sample
-n n`: the pool's start is not a run's. pytest-repeat's likewise, from --count n against --count 2.
Absolute figures are kept beside the machine state, never printed alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional

import pairs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
AFFIDAVIT = os.path.join(BIN, "affidavit")
NODE = "bench/trivial/test_trivial.py::test_trivial"
SUITES_PY = os.path.join(ROOT, "build", "bench-env", "suites", "bin", "python")


def timed(cmd: List[str], env: Optional[Dict[str, str]] = None, cwd: str = ROOT) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def ring_us(mode: str) -> Callable[[], float]:
    def measure() -> float:
        out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ring.py"), mode, "20000"], cwd=ROOT,
                             check=True, capture_output=True, text=True)
        return float(json.loads(out.stdout)["us_per_hop"])
    return measure


def engine_run_s(n: int = 1000) -> float:
    """One run's steady cost through the engine (all cores' workers), in seconds."""
    return (timed([AFFIDAVIT, "sample", NODE, "-n", str(n), "--json"]) -
            timed([AFFIDAVIT, "sample", NODE, "-n", "2", "--json"])) / (n - 2)


def reinvocation_run_s(runs: int = 4) -> float:
    """One run's cost when pytest is re-invoked per run, as many at a time as there are cores."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:affidavit", NODE]
    par = os.cpu_count() or 1
    t0 = time.perf_counter()
    with ThreadPoolExecutor(par) as ex:
        list(ex.map(lambda _: timed(cmd), range(runs)))
    return (time.perf_counter() - t0) / runs


def pytest_repeat_run_s(n: int = 5000) -> float:
    """One rerun's steady cost under pytest-repeat (the suites' bench venv has it), in seconds."""
    base = [SUITES_PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:affidavit", "-p", "repeat", NODE]
    return (timed(base + ["--count", str(n)]) - timed(base + ["--count", "2"])) / (n - 2)


def has_pytest_repeat() -> bool:
    if not os.access(SUITES_PY, os.X_OK):
        return False
    return subprocess.run([SUITES_PY, "-c", "import pytest_repeat"], capture_output=True).returncode == 0


def plugin_session(tests_dir: str, disabled: bool) -> float:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", tests_dir]
    return timed(cmd + (["-p", "no:affidavit"] if disabled else []), cwd=tests_dir)


def fork_pairs(n: int) -> Dict[str, Any]:
    """bench/forkcost.py n times: each invocation measures both sides over 200 forks, interleaved."""
    got = []
    for _ in range(n):
        out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "forkcost.py"), NODE], cwd=ROOT,
                             check=True, capture_output=True, text=True)
        d = json.loads(out.stdout)
        got.append((d["fork_exit"]["wall_ms"], d["fork_protocol"]["wall_ms"]))
    return pairs.summarize(got)


def measure(n: int = pairs.MIN_PAIRS) -> Dict[str, Any]:
    import tempfile

    out: Dict[str, Any] = {}
    print("affidavit bench: ring pairs", file=sys.stderr)
    out["ring_stock_over_controlled"] = pairs.interleaved(ring_us("stock"), ring_us("controlled"), n, "a/b")
    out["ring_stock_over_nohooks"] = pairs.interleaved(ring_us("stock"), ring_us("controlled-nohooks"), n, "a/b")
    out["ring_traced_over_untraced"] = pairs.interleaved(ring_us("controlled"), ring_us("controlled-traced"), n)
    print("affidavit bench: plugin pairs", file=sys.stderr)
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "test_plain.py"), "w") as f:
            for i in range(400):
                f.write(f"def test_{i}():\n    assert {i} + 1 == {i + 1}\n\n")
        out["plugin_inactive_over_plain"] = pairs.interleaved(lambda: plugin_session(d, True),
                                                              lambda: plugin_session(d, False), n)
    print("affidavit bench: engine pairs", file=sys.stderr)
    out["reinvocation_over_engine"] = pairs.interleaved(engine_run_s, reinvocation_run_s, n)
    if has_pytest_repeat():
        out["engine_over_pytest_repeat"] = pairs.interleaved(pytest_repeat_run_s, engine_run_s, n)
    else:
        out["engine_over_pytest_repeat"] = {"not_measured": f"no pytest-repeat in {SUITES_PY} (bench/suites.py "
                                                            "makes that venv)"}
    print("affidavit bench: fork pairs", file=sys.stderr)
    out["run_over_fork_exit"] = fork_pairs(n)
    return out


ROWS = [
    ("ring_stock_over_controlled", "stock / controlled per hop, with queue hooks", "goal >= 1.5x"),
    ("ring_stock_over_nohooks", "stock / controlled per hop, loop + recorder", "goal >= 1.5x"),
    ("ring_traced_over_untraced", "traced / untraced per hop", "goal <= 3x"),
    ("plugin_inactive_over_plain", "plugin installed, inactive / plain (400 sync tests)", "goal: within noise"),
    ("reinvocation_over_engine", "pytest re-invoked per run / a run through the engine", "goal >= 40x"),
    ("engine_over_pytest_repeat", "a run through the engine / pytest-repeat's in-process rerun",
     "isolation's price"),
    ("run_over_fork_exit", "fork + run protocol / bare fork + _exit, warm worker", "the run protocol's share"),
]


def rows(r: Dict[str, Any]) -> List[tuple]:  # type: ignore[type-arg]
    got = []
    for key, label, note in ROWS:
        x = r.get(key) or {}
        value = pairs.text(x, ".2f") if "median" in x else "not measured"
        got.append((label, value, note if "median" in x else str(x.get("not_measured", ""))))
    return got


def machine_state() -> Dict[str, Any]:
    """The machine and what moves absolute figures on it: load, transparent huge pages, CPU model."""
    thp = None
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled", encoding="utf-8") as f:
            thp = next((w.strip("[]") for w in f.read().split() if w.startswith("[")), None)
    except OSError:
        pass
    cpu = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), None)
    except OSError:
        pass
    return {"load": [round(x, 2) for x in os.getloadavg()], "thp": thp, "cpu": cpu, "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main(argv: List[str]) -> int:
    """python bench/foundation.py [--pairs N]: the pairs alone (make bench runs them with the rest),
    written to bench/foundation_results.json with the machine state before and after."""
    n = int(argv[argv.index("--pairs") + 1]) if "--pairs" in argv else pairs.MIN_PAIRS
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    before = machine_state()
    got = measure(n)
    result = {"commit": commit.stdout.strip() or None, "machine_before": before, "machine_after": machine_state(),
              "pairs": got}
    with open(os.path.join(ROOT, "bench", "foundation_results.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(f"machine: {before['cpu']}, {before['cpus']} cpus, load {before['load']} -> "
          f"{result['machine_after']['load']}, transparent huge pages {before['thp']}")
    for label, value, note in rows(got):
        print(f"{label:<62} {value:>32}  {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
