"""First contact with the next suites of the pool (/work/shared/realworld/POOL.md), before any code
is changed for them.

Usage: .venv/bin/python bench/first_contact.py [--only NAME,...] [--affidavit PATH] [--explore N]
       .venv/bin/python bench/first_contact.py --retally   (the JSON again from the kept sessions)

For each entry of POOL below, in the pool's order, skipping those already in bench/suites.py
SUITES: its sdist is fetched (`pip download --no-deps --no-binary :all: PIN`); one that ships no test
file is recorded as skipped. Otherwise it is installed with what its suite needs (bench/
requirements-suites.txt and the entry's own extras) into its own venv, build/bench-env/fc/NAME/venv
(its own: looptime, pyleak and pytest-trio are pytest plugins that would reach every other suite),
and its suite runs once each plain (-p no:affidavit), inactive (the plugin installed, no option)
and with --affidavit-explore=N, through bench/suites.py's session() (JUnit XML per test, the
plugin's summary lines, the explore documents of .affidavit/explore/*.jsonl). A suite with tests
none of which pass plainly is recorded as skipped.

Per suite, written to the `after` record of bench/suites_first_contact.json: tests, passed plainly;
each test red under explore that passed plainly, with the explore document's verdict, failing run,
schedule, failure text and a reading of why (READINGS below: written by hand after reading the
test, never by this script); the tests the plugin kept green but listed apart (timing_sensitive,
unconfirmed, abstained), from the per-test status the plugin records in the JUnit XML; the tests not
explored with the plugin's reason; explore/plain and inactive/plain wall time (one session each: a
first-contact figure, not bench/suites.py's median of interleaved pairs). The `before` record
(commit 355b9ad, an earlier run) is kept as it is in the file.
"""

from __future__ import annotations

import datetime
import glob
import json
import os
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Optional

import suites

ROOT = suites.ROOT
BASE = os.path.join(ROOT, "build", "bench-env", "fc")
OUT = os.path.join(ROOT, "bench", "suites_first_contact.json")
PROP = "affidavit_explore"  # the JUnit property the plugin records each test's status in

# The pool's first entries, in its order: the PyPI pin (the newest version that installs on Python
# 3.11), the test paths and arguments the command line adds (why, beside each), and what the suite
# needs beyond bench/requirements-suites.txt (from the sdist's own test requirements).
POOL: List[Dict[str, Any]] = [
    {"name": "looptime", "pin": "looptime==0.9", "args": ["tests"], "extras": ["async-timeout==5.0.1"]},
    {"name": "aiodebug", "pin": "aiodebug==2.2.1"},
    # pyleak's trio tests need pytest-trio; its FastAPI tests need fastapi and httpx
    {"name": "pyleak", "pin": "pyleak==0.2.0", "args": ["tests"],
     "extras": ["trio==0.35.0", "pytest-trio==0.8.0", "fastapi==0.163.2", "httpx==0.28.1"]},
    # its test_posix.py runs every case with and without uvloop
    {"name": "aiorun", "pin": "aiorun==2025.1.1", "args": ["tests"], "extras": ["uvloop==0.23.0"]},
    # the tests ship inside the package (later/tests)
    {"name": "later", "pin": "later==26.8.1", "args": ["later/tests"], "extras": []},
    {"name": "unsync", "pin": "unsync==1.4.0", "args": ["test"], "extras": []},
    {"name": "cachettl", "pin": "cachettl==1.0.4"},
    {"name": "py-memoize", "pin": "py-memoize==3.1.1"},
    {"name": "aiopath", "pin": "aiopath==0.6.11"},
]

# Why each test red under explore failed, read by hand from the test's source and its failure
# (suite -> JUnit key -> reading). A red test not named here is recorded as "not read yet".
_LATER_SLEEP_500 = (
    "The test watches a task sleeping asyncio.sleep(500) (a 'forever' sleep), leaves the Watcher (by "
    "raising / by later.timeout(0.2)) and asserts the watcher cancelled that task. In the failing schedule "
    "(replayed with --events) one step of the watcher's exit costs 499,999 ms of virtual time, capped by "
    "the below-deadlines half to 1 ms (AFD_PCT_MARGIN_NS) short of the sleep's wake-up; the sleep's timer "
    "is then within AFD_WAKE_BATCH_NS, so afd_deadline_horizon (src/runtime/deadlines.c) no longer counts "
    "it as a threshold, and the next step's 10 ms cost carries the clock 9 ms past it unrecorded: the "
    "sleep(500) task completes normally before the watcher cancels it, task.cancelled() is False. Stock "
    "asyncio gives this only if the test stalls 500 s between watch() and the cancel: a time threshold "
    "outlasted, not a race. No AFD_EV_DEADLINE_LATE is recorded (the first step stops 1 ms short, more "
    "than AFD_REACH_NS), so the timing check never runs and the verdict is failure, not timing_sensitive: "
    "the product's bug (two steps together outlast what each is capped below)."
)
_AIORUN_STOCK_LOOP = (
    "A sync test calls aiorun.run(main(), stop_on_unhandled_errors=True), which sets asyncio's "
    "DefaultEventLoopPolicy, makes a stock loop with asyncio.new_event_loop() and runs it forever until "
    "main's error (or the exception handler) stops it; main first awaits asyncio.sleep(0.01) / (0.1). "
    "Red under the zero schedule (run 1 of 1), a 10 s hang whose only event is 'an event loop affidavit "
    "does not control ran'; py-spy shows the run's process in BaseEventLoop._run_once's select, the "
    "stock loop. The run is controlled, so src/runtime/clocks.c makes time.monotonic() on the run's "
    "thread read the virtual clock (asyncio's own files included), and with no controlled loop to jump "
    "it, that clock moves only AFD_CLOCK_READ_NS (100 ns) per read: the stock loop's time() barely "
    "moves, select waits the real 10 ms it computed, and the sleep's timer never comes due. Stock "
    "asyncio never does this (plain and inactive sessions pass): the product's bug -- an uncontrolled "
    "loop on the run's thread reads the virtual clock. At 355b9ad these 4 were not explored (misnamed "
    "'own loop class'); now they are run and hang."
)
_PYLEAK_SLEEP_10 = (
    "The test runs code that leaks a task sleeping asyncio.sleep(10) (leaky_function, create_named_task) "
    "while the test itself sleeps 0.1 s, then pyleak's no_task_leaks exit (after its own "
    "asyncio.sleep(0.01)) must find the leaked task still pending. In the failing schedule (each replayed "
    "with --events) the step that wakes the test's sleep(0.1) costs 9,898.999 ms (9,997.999 ms in "
    "Decorator::test_action_raise): capped by the below-deadlines half 1 ms (AFD_PCT_MARGIN_NS) short of "
    "the leaked task's sleep(10) wake-up; pyleak's own sleep(0.01) then carries the clock past it, the "
    "leaked task finishes, and no leak is found (0 warnings, no TaskLeakError, not cancelled). Stock "
    "asyncio gives this only if one step stalls ~9.9 s: a time threshold (two sleeps of different "
    "lengths raced), not a race. The cap is 1 ms short of the wake-up, more than AFD_REACH_NS, so no "
    "AFD_EV_DEADLINE_LATE is recorded and the timing check never runs: verdict failure instead of "
    "timing_sensitive (listed apart, green) -- the product's bug, as in later's two."
)
_PYLEAK_TRIO = (
    "A trio test (pytest-trio, @pytest.mark.trio) that pyleak's no_leaks marker keeps an async function, "
    "so the plugin explores it; it only awaits trio.sleep(0.01). Red under the zero schedule: a 10 s hang "
    "with no event at all (no asyncio loop ran). py-spy: the run's process waits in trio's "
    "EpollIOManager.get_events under trio.run. trio's clock is `from time import perf_counter`, which in "
    "a controlled run is src/runtime/clocks.c's hook: virtual on the run's thread, advancing only 100 ns "
    "a read with no controlled loop to jump it, so trio's 10 ms deadline never comes. Stock asyncio and "
    "plain pytest never do this (it passes plain and inactive): the product's bug -- a test that runs no "
    "asyncio loop at all is explored, and its foreign loop's clock is virtualised. (The other 6 trio "
    "tests, test_trio_event_loop_blocking.py, whose item.obj pytest-trio replaces with a sync runner, "
    "are neither explored nor listed as not explored.)"
)
READINGS: Dict[str, Dict[str, str]] = {
    "pyleak": {
        **{f"tests.test_task_leaks.{t}": _PYLEAK_SLEEP_10 for t in (
            "TestNoTaskLeaksContextManager::test_action_cancel", "TestNoTaskLeaksContextManager::test_action_log",
            "TestNoTaskLeaksContextManager::test_action_raise", "TestNoTaskLeaksContextManager::test_action_warn",
            "TestNoTaskLeaksContextManager::test_enable_creation_tracking",
            "TestNoTaskLeaksContextManager::test_invalid_regex_fallback",
            "TestNoTaskLeaksContextManager::test_multiple_leaks",
            "TestNoTaskLeaksContextManager::test_name_filter_exact_match",
            "TestNoTaskLeaksContextManager::test_name_filter_regex", "TestNoTaskLeaksDecorator::test_action_raise",
            "TestNoTaskLeaksDecorator::test_action_warn", "TestNoTaskLeaksDecorator::test_decorator_with_name_filter")},
        "tests.test_plugin::test_trio_no_leaks": _PYLEAK_TRIO,
        "tests.test_plugin::test_trio_no_leaks_threads_and_blocking": _PYLEAK_TRIO,
    },
    "aiorun": {
        "tests.test_stop_on_errors::test_call_exception_handler[context0-None]": _AIORUN_STOCK_LOOP,
        "tests.test_stop_on_errors::test_call_exception_handler[context1-_TestException]": _AIORUN_STOCK_LOOP,
        "tests.test_stop_on_errors::test_exc_stop": _AIORUN_STOCK_LOOP,
        "tests.test_stop_on_errors::test_stop_must_be_obeyed": _AIORUN_STOCK_LOOP,
    },
    "later": {
        "later-26.8.1.later.tests.test_task.WatcherTests::test_watcher_canceled_parent_aexit": _LATER_SLEEP_500,
        "later-26.8.1.later.tests.test_task.WatcherTests::test_watcher_raise_in_body": _LATER_SLEEP_500,
    },
}


def log(msg: str) -> None:
    print(f"first_contact: {msg}", file=sys.stderr, flush=True)


def use(name: str) -> None:
    """bench/suites.py's helpers, pointed at this suite's own venv and source directory."""
    suites.ENV = os.path.join(BASE, name, "venv")
    suites.SRC = os.path.join(BASE, name, "src")
    suites.LINK = os.path.join(BASE, "affidavit-link")


def fetch(s: Dict[str, Any]) -> str:
    """The sdist, unpacked under the suite's source directory; its directory."""
    os.makedirs(suites.SRC, exist_ok=True)
    if not glob.glob(os.path.join(suites.SRC, "*.tar.gz")):
        suites.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                    "--no-binary", ":all:", s["pin"], "-d", suites.SRC])
        for sdist in glob.glob(os.path.join(suites.SRC, "*.tar.gz")):
            suites.tarfile.open(sdist).extractall(suites.SRC)
    # pytest's search for a configuration file stops here, not in this repository's pyproject.toml
    with open(os.path.join(suites.SRC, "pytest.ini"), "w", encoding="utf-8") as f:
        f.write("[pytest]\n")
    return suites.suite_dir(s)


def test_files(d: str) -> List[str]:
    found = [os.path.relpath(p, d) for p in glob.glob(os.path.join(d, "**", "*.py"), recursive=True)
             if os.path.basename(p).startswith("test_") or os.path.basename(p).endswith("_test.py")]
    return sorted(found)


def install(s: Dict[str, Any], engine: str) -> str:
    py = os.path.join(suites.ENV, "bin", "python")
    want = json.dumps([open(suites.REQ, encoding="utf-8").read(), s["pin"], s.get("extras", [])])
    stamp = os.path.join(suites.ENV, ".stamp")
    if not (os.path.exists(stamp) and open(stamp, encoding="utf-8").read() == want):
        venv_py = os.path.join(os.path.dirname(engine), "python")
        base = suites.run([venv_py, "-c", "import sys; print(sys._base_executable)"]).stdout.strip()
        shutil.rmtree(suites.ENV, ignore_errors=True)
        log(f"{s['name']}: creating {suites.ENV}")
        suites.run([base, "-m", "venv", suites.ENV])
        pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        suites.run(pip + ["-r", suites.REQ, *s.get("extras", [])])
        suites.run(pip + [suites.suite_dir(s)])
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(want)
    suites.link_affidavit(py, os.path.join(os.path.dirname(engine), "python"), engine)
    return py


def statuses(xml: str) -> Dict[str, str]:
    """JUnit key -> the status the plugin recorded for the test (explored, failure, not explored: ...)."""
    out: Dict[str, str] = {}
    if not os.path.exists(xml):
        return out
    for case in suites.ET.parse(xml).getroot().iter("testcase"):
        for prop in case.iter("property"):
            if prop.get("name") == PROP:
                out[f"{case.get('classname')}::{case.get('name')}"] = prop.get("value") or ""
    return out


def run_suite(s: Dict[str, Any], engine: str, explore: int) -> Dict[str, Any]:
    d = fetch(s)
    files = test_files(d)
    if not files:
        return {"pin": s["pin"], "skipped": "the sdist ships no test file (no test_*.py or *_test.py)"}
    py = install(s, engine)
    got: Dict[str, Any] = {"pin": s["pin"], "args": s["args"], "extras": s.get("extras", []), "test_files": files}
    for mode in ("plain", "inactive", "explore"):
        log(f"{s['name']}: {mode}")
        r = suites.session(py, s, mode, explore, f"fc-{mode}")
        r["statuses"] = statuses(os.path.join(ROOT, "build", "bench-env", f"junit-{s['name']}-fc-{mode}.xml"))
        got[mode] = r
        log(f"{s['name']}: {mode}: {r['wall_s']:.1f} s, exit {r['exit']}, {r['last_line']}")
    got["asyncs"] = suites.async_tests(py, s)
    got["freeze"] = suites.run([py, "-m", "pip", "freeze", "--exclude-editable"]).stdout.split()
    return got


def tally(name: str, got: Dict[str, Any]) -> Dict[str, Any]:
    if "skipped" in got:
        return got
    plain, inactive, exp = got["plain"], got["inactive"], got["explore"]
    passed = sorted(k for k, v in plain["outcomes"].items() if v == "passed")
    if not passed:
        return {"pin": got["pin"], "skipped": f"no test passes plainly (plain session: {plain['last_line']})"}
    t = suites.tally(plain, inactive, exp, got["asyncs"])
    docs = {suites.key_of(d.get("nodeid", "")): d for d in exp["explore_docs"]}
    st = exp["statuses"]
    red = []
    for k in passed:
        if exp["outcomes"].get(k) not in ("failed", "error"):
            continue
        d = docs.get(k) or {}
        red.append({"test": k, "verdict": d.get("verdict") or ("failure" if d.get("found") else None),
                    "status": st.get(k), "failing_run": d.get("failing_run"), "runs": d.get("runs"),
                    "schedule": d.get("schedule"), "failure": (d.get("failure") or exp["failures"].get(k, ""))[:400],
                    "why": READINGS.get(name, {}).get(k, "not read yet")})
    apart: Dict[str, List[Dict[str, str]]] = {"timing_sensitive": [], "unconfirmed": [], "abstained": []}
    not_explored: Dict[str, List[str]] = {}
    for k, v in sorted(st.items()):
        if v.startswith("not explored: "):
            not_explored.setdefault(v[len("not explored: "):], []).append(k)
        elif v.startswith("timing_sensitive: "):
            apart["timing_sensitive"].append({"test": k, "why": v[len("timing_sensitive: "):]})
        elif v.startswith("unconfirmed: abstained: "):
            apart["abstained"].append({"test": k, "why": v[len("unconfirmed: abstained: "):]})
        elif v.startswith("unconfirmed: "):
            apart["unconfirmed"].append({"test": k, "why": v[len("unconfirmed: "):]})
    return {
        "pin": got["pin"], "args": got["args"], "extras": got["extras"],
        "tests": t["tests"], "passed_plain": t["passed_plain"], "async_passed_plain": t["async_passed_plain"],
        "explored": t["explored"], "explore_verdicts": t["explore_verdicts"], "closure": t["closure"],
        "red": red, "listed_apart": apart,
        "not_explored": {r: {"count": len(ks), "tests": ks} for r, ks in not_explored.items()},
        # async tests that passed plainly with neither a status nor an explore result: must be empty
        "async_passed_without_status": sorted({suites.key_of(n) for n in got["asyncs"]} & set(passed) - set(st)),
        "missing_under_explore": t["missing_under_explore"], "internal_error": t["internal_error"],
        "summary_lines": t["summary_lines"],
        "plain_s": t["plain_s"], "inactive_s": t["inactive_s"], "explore_s": t["explore_s"],
        "explore_over_plain": t["explore_over_plain"], "inactive_over_plain": t["inactive_over_plain"],
        "runs": t["runs"], "exits": {m: got[m]["exit"] for m in ("plain", "inactive", "explore")},
        "installed": got["freeze"],
    }


def commit() -> str:
    return suites.run(["git", "-C", ROOT, "rev-parse", "HEAD"]).stdout.strip()


def main(argv: List[str]) -> int:
    explore = 30
    only: Optional[List[str]] = None
    retally = False
    engine = os.path.join(ROOT, ".venv", "bin", "affidavit")
    it = iter(argv)
    for a in it:
        if a == "--only":
            only = next(it).split(",")
        elif a == "--affidavit":
            engine = os.path.abspath(next(it))
        elif a == "--explore":
            explore = int(next(it))
        elif a == "--retally":
            retally = True
        else:
            print(f"usage: first_contact.py [--only NAME,...] [--affidavit PATH] [--explore N] [--retally] (not {a!r})",
                  file=sys.stderr)
            return 2
    # the pool's rule: an entry already in bench/suites.py is skipped, unless named by --only or
    # re-tallied (the five this file met first are in SUITES since)
    known = set() if retally or only else {s["name"] for s in suites.SUITES}
    doc: Dict[str, Any] = {}
    if os.path.exists(OUT):
        with open(OUT, encoding="utf-8") as f:
            doc = json.load(f)
    after = doc.setdefault("after", {})
    after.update({"commit": commit(), "date": datetime.date.today().isoformat(), "explore": explore,
                  "machine": suites.machine()})
    res = after.setdefault("suites", {})
    for s in POOL:
        if s["name"] in known or (only and s["name"] not in only):
            continue
        use(s["name"])
        raw = os.path.join(BASE, s["name"], "sessions.json")
        if retally:
            if not os.path.exists(raw):
                continue
            with open(raw, encoding="utf-8") as f:
                got = json.load(f)
        else:
            got = run_suite(s, engine, explore)
            with open(raw, "w", encoding="utf-8") as f:
                json.dump(got, f)
        res[s["name"]] = tally(s["name"], got)
        r = res[s["name"]]
        if "skipped" in r:
            log(f"{s['name']}: skipped: {r['skipped']}")
        else:
            log(f"{s['name']}: {r['passed_plain']}/{r['tests']} pass plainly; {len(r['red'])} red under explore; "
                f"not explored {sum(v['count'] for v in r['not_explored'].values())}; "
                f"explore/plain {r['explore_over_plain']:.1f}x")
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
