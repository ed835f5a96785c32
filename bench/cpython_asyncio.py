"""CPython's own asyncio tests (`test.test_asyncio`) under the controlled loop: the judge of fidelity.

Usage: .venv/bin/python bench/cpython_asyncio.py [--pythons 3.10,3.11,...] [--modules test_locks,...]
                                                 [--explore N] [--out FILE]
       .venv/bin/python bench/cpython_asyncio.py --table   (the table of the committed results again)

For every Python 3.10-3.13 this machine has (affidavit built for each, as tests/test_versions.py
builds it, in build/py3.X-venv; 3.11 is .venv) and every module below, three sessions over the
interpreter's own file (its lib/python3.X/test/test_asyncio/MODULE.py, run in place, never copied,
with bytecode writing off so nothing lands beside it):
  plain     python -m pytest MODULE.py --junitxml=...            outcomes per test (JUnit XML)
  zero      affidavit explore MODULE.py --strategy zero -n 1      one run per test, zero delays
  explore   affidavit explore MODULE.py -n N (default 30)         the portfolio (--explore 0: not run)
A module the interpreter does not have (test_taskgroups and test_timeouts are 3.11+) is a row that
says so. Counted per row, over the tests that pass plainly: those that pass under zero delays, those
that fail under them (a difference between the controlled loop and stock asyncio, never a race:
listed with their failure, unless plain pytest fails the test when given it alone: it counts on the
tests before it, and is listed as the plugin lists it, not explored), those not explored with the
reason the engine gave (a test that builds its own loop, test_utils.TestLoop say, is named, not run
under ours), and under explore the red ones
by verdict (`timing_sensitive` is listed apart, as the plugin lists it). Nothing asserts: the table is
printed and written to bench/cpython_asyncio_results.json (--out: elsewhere).
"""

from __future__ import annotations

import collections
import functools
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from test_versions import INTERPRETERS, env_for  # noqa: E402  (one way to build affidavit per Python)

OUT = os.path.join(ROOT, "bench", "cpython_asyncio_results.json")
SCRATCH = os.path.join(ROOT, "build", "cpython-asyncio")
MODULES = ["test_locks", "test_queues", "test_tasks", "test_taskgroups", "test_timeouts", "test_waitfor",
           "test_futures", "test_futures2", "test_pep492", "test_context", "test_runners", "test_base_events",
           "test_events", "test_streams", "test_subprocess", "test_unix_events"]
# verdicts that are not red: what explore reports for a test no schedule fails, or lists apart
NOT_RED = ("no_failure", "timing_sensitive", "abstained", "unconfirmed")


@functools.lru_cache(maxsize=None)
def venv_bin(minor: str) -> str:
    """The bin directory of the venv with affidavit for this Python (built once per session): the
    running interpreter's own for its version (.venv's, or .venv-asan's under make test-asan)."""
    if minor == f"{sys.version_info[0]}.{sys.version_info[1]}":
        return os.path.dirname(sys.executable)
    env_for(minor)
    return os.path.join(ROOT, "build", f"py{minor}-venv", "bin")


def module_path(minor: str, module: str) -> str:
    base = os.path.dirname(os.path.dirname(INTERPRETERS[minor]))
    return os.path.join(base, "lib", f"python{minor}", "test", "test_asyncio", f"{module}.py")


def environment() -> Dict[str, str]:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("VIRTUAL_ENV", None)
    return env


def plain(minor: str, path: str, cwd: str) -> Dict[str, Any]:
    """Outcomes per node id (module.py::Class::test) of one plain pytest session."""
    xml = os.path.join(cwd, f"plain-{os.getpid()}.xml")
    if os.path.exists(xml):
        os.remove(xml)
    t0 = time.monotonic()
    subprocess.run([os.path.join(venv_bin(minor), "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={xml}", path], cwd=cwd, env=environment(), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    seconds = time.monotonic() - t0
    outcomes: Dict[str, str] = {}
    if os.path.exists(xml):
        for case in ET.parse(xml).getroot().iter("testcase"):
            module, _, cls = (case.get("classname") or "").partition(".")
            nodeid = f"{module}.py::{cls}::{case.get('name')}" if cls else f"{module}.py::{case.get('name')}"
            kinds = [child.tag for child in case]
            outcome = "failed" if "failure" in kinds else "error" if "error" in kinds else \
                "skipped" if "skipped" in kinds else "passed"
            if outcomes.get(nodeid) not in ("failed", "error"):  # a teardown error is a second element
                outcomes[nodeid] = outcome
    return {"seconds": round(seconds, 2), "outcomes": outcomes}


def engine(minor: str, path: str, cwd: str, args: List[str]) -> Dict[str, Any]:
    """explore's document per node id, or {"error": why} for a test it did not explore."""
    t0 = time.monotonic()
    p = subprocess.run([os.path.join(venv_bin(minor), "affidavit"), "explore", path, *args, "--json",
                        "--timeout", "30"], cwd=cwd, env=environment(), capture_output=True, text=True)
    seconds = time.monotonic() - t0
    docs: Dict[str, Any] = {}
    for line in p.stdout.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and "nodeid" in d:
            docs[d["nodeid"]] = d
    return {"seconds": round(seconds, 2), "exit": p.returncode, "docs": docs,
            "stderr_tail": p.stderr.strip().splitlines()[-1:] if not docs else []}


def fails_alone_plainly(minor: str, path: str, nodeid: str, cwd: str) -> bool:
    """Whether plain pytest, given this one test, does not pass it (False: it passes alone)."""
    test = nodeid.split("::", 1)[1]
    p = subprocess.run([os.path.join(venv_bin(minor), "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        f"{path}::{test}"], cwd=cwd, env=environment(), stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return p.returncode != 0


def why_not(doc: Dict[str, Any]) -> str:
    """The reason a test was not explored, shortened to its kind."""
    err = doc.get("error", "")
    if "ran its own event loop" in err:
        return "its own loop: " + err.split("(", 1)[1].split(" under ", 1)[0] if "(" in err else "its own loop"
    if "ran no asyncio event loop" in err:
        return "no event loop"
    return err[:120]


def row(minor: str, module: str, explore: int, cwd: Optional[str] = None) -> Dict[str, Any]:
    """One module under one Python (cwd: where the sessions run; build/cpython-asyncio/3.X)."""
    path = module_path(minor, module)
    if not os.path.exists(path):
        return {"python": minor, "module": module, "absent": f"Python {minor} has no test.test_asyncio.{module}"}
    cwd = cwd or os.path.join(SCRATCH, minor)
    os.makedirs(cwd, exist_ok=True)
    p = plain(minor, path, cwd)
    z = engine(minor, path, cwd, ["--strategy", "zero", "-n", "1"])
    passed = sorted(n for n, o in p["outcomes"].items() if o == "passed")
    r: Dict[str, Any] = {"python": minor, "module": module, "tests": len(p["outcomes"]), "passed_plain": len(passed),
                         "plain_s": p["seconds"], "zero_s": z["seconds"], "zero_pass": 0, "zero_red": [],
                         "zero_skip": 0, "not_explored": collections.Counter(), "missing": []}
    for n in passed:
        d = z["docs"].get(n)
        if d is None:
            r["missing"].append(n)
        elif "error" in d:
            r["not_explored"][why_not(d)] += 1
        elif d.get("outcome") == "pass":
            r["zero_pass"] += 1
        elif d.get("outcome") == "skip":
            r["zero_skip"] += 1
        else:
            r["zero_red"].append({"nodeid": n, "outcome": d.get("outcome"), "failure": (d.get("failure") or "")[:300]})
    # A red under zero delays on a test that fails when plain pytest runs it alone counts on the
    # tests before it (each run is a fork of the collected session, as a test run alone is): the
    # plugin lists such a test as not explored with that reason; so does this table.
    alone = {red["nodeid"] for red in r["zero_red"] if not fails_alone_plainly(minor, path, red["nodeid"], cwd)}
    r["fails_alone"] = sorted(red["nodeid"] for red in r["zero_red"] if red["nodeid"] not in alone)
    r["zero_red"] = [red for red in r["zero_red"] if red["nodeid"] in alone]
    if explore:
        e = engine(minor, path, cwd, ["-n", str(explore)])
        r["explore_s"] = e["seconds"]
        verdicts: collections.Counter = collections.Counter()
        reds = []
        for n in passed:
            d = e["docs"].get(n)
            if d is None or "error" in d:
                continue
            if n in r["fails_alone"]:
                continue
            v = d.get("verdict") or "?"
            verdicts[v] += 1
            if v not in NOT_RED:
                reds.append({"nodeid": n, "verdict": v, "schedule": d.get("schedule"),
                             "failure": (d.get("failure") or "")[:300]})
        r["explore_verdicts"] = dict(verdicts)
        r["explore_red"] = reds
    r["not_explored"] = dict(r["not_explored"])
    return r


def table(rows: List[Dict[str, Any]]) -> str:
    head = (f"{'python':6} {'module':18} {'tests':>5} {'plain ok':>8} {'zero ok':>7} {'zero red':>8} "
            f"{'not expl':>8} {'expl red':>8} {'timing':>6} {'plain s':>7} {'zero s':>6} {'expl s':>6}")
    lines = [head, "-" * len(head)]
    for r in rows:
        if "absent" in r:
            lines.append(f"{r['python']:6} {r['module']:18} {'(not in this Python)':>40}")
            continue
        v = r.get("explore_verdicts", {})
        expl_red = str(len(r["explore_red"])) if "explore_red" in r else "-"
        timing = str(v.get("timing_sensitive", 0)) if "explore_red" in r else "-"
        lines.append(f"{r['python']:6} {r['module']:18} {r['tests']:5} {r['passed_plain']:8} {r['zero_pass']:7} "
                     f"{len(r['zero_red']) + len(r['missing']):8} {sum(r['not_explored'].values()) + len(r.get('fails_alone', [])):8} {expl_red:>8} "
                     f"{timing:>6} {r['plain_s']:7.1f} {r['zero_s']:6.1f} {r.get('explore_s', 0):6.1f}")
    for r in rows:
        for red in r.get("zero_red", []) + [{"nodeid": n, "outcome": "missing", "failure": ""} for n in r.get("missing", [])]:
            lines.append(f"  zero red  {r['python']} {red['nodeid']}: {red['outcome']}: {red['failure'][:160]}")
        for n in r.get("fails_alone", []):
            lines.append(f"  fails alone under plain pytest (counts on the tests before it)  {r['python']} {n}")
        for red in r.get("explore_red", []):
            lines.append(f"  explore red  {r['python']} {red['nodeid']}: {red['verdict']}: {red['failure'][:160]}")
    return "\n".join(lines)


def main(argv: List[str]) -> int:
    # CPython's tests interrupt themselves with SIGINT (test_runners): started in the background of a
    # shell, which ignores SIGINT for it, their sessions would spin forever. Caught here, it is the
    # default again in every session this starts.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    args = {"--pythons": ",".join(sorted(INTERPRETERS)), "--modules": ",".join(MODULES), "--explore": "30",
            "--out": OUT}
    if argv == ["--table"]:
        with open(OUT) as f:
            print(table(json.load(f)["rows"]))
        return 0
    it = iter(argv)
    for a in it:
        if a not in args:
            print(f"cpython_asyncio.py: unknown option {a}", file=sys.stderr)
            return 2
        args[a] = next(it, "")
    pythons = [m for m in args["--pythons"].split(",") if m]
    unknown = [m for m in pythons if m not in INTERPRETERS]
    if unknown:
        print(f"cpython_asyncio.py: no Python {', '.join(unknown)} on this machine", file=sys.stderr)
        return 2
    rows = []
    for minor in pythons:
        for module in [m for m in args["--modules"].split(",") if m]:
            print(f"[{time.strftime('%H:%M:%S')}] Python {minor} {module}", file=sys.stderr, flush=True)
            rows.append(row(minor, module, int(args["--explore"])))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    doc = {"commit": commit.stdout.strip(), "date": time.strftime("%Y-%m-%d"), "explore": int(args["--explore"]),
           "loadavg": open("/proc/loadavg").read().split()[:3], "cores": os.cpu_count(), "rows": rows}
    with open(args["--out"], "w") as f:
        json.dump(doc, f, indent=1)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
