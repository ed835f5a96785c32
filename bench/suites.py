"""Real asyncio libraries' own test suites under `pytest --affidavit-explore=N`.

Usage: .venv/bin/python bench/suites.py [--explore N] [--rounds N] [--only NAME,...] [--affidavit PATH] [--out FILE]
       .venv/bin/python bench/suites.py --table    (the table of the committed results again)

Each library below is built from its PyPI sdist (which ships its tests) into build/bench-env/suites,
a venv of the interpreter .venv was made with, together with what its suite needs
(bench/requirements-suites.txt); those marked own_venv (met at the fifth and sixth first contacts) run
in the venv bench/first_contact.py makes for each, from its POOL entry. The suite's own configuration (setup.cfg, pyproject.toml: addopts,
filterwarnings = error, timeouts, asyncio_mode) is used untouched; what the command line adds for a
suite is listed beside it below (deselecting tests that need a network service, and settings that
pytest-asyncio 1.5 requires and an older suite does not set). affidavit reaches that venv through a
.pth file naming a directory that holds only its package and its dist-info (the pytest11 entry
point), and the engine runs workers with that venv's interpreter (AFFIDAVIT_PYTHON).

Per suite, --rounds (default 10) rounds of three sessions of the same command, the order flipped
every round (plain, inactive, explore; then explore, inactive, plain):
  plain     python -m pytest ... -p no:affidavit
  inactive  python -m pytest ...                 (the plugin installed, not asked for anything)
  explore   python -m pytest ... --affidavit-explore=N
so that each ratio to plain is the median (and range) of ten interleaved pairs (pairs.py); fewer
rounds (--rounds 1: a check that a suite runs) give the first round's ratios, one session each.
--out writes the results elsewhere than bench/suites_results.json (a check with --only need not
replace the committed table). Each writes a JUnit XML file; outcomes per test come from those files, never from parsing text. From
the explore session also: the plugin's own summary lines (the lines starting with "affidavit:") and
the explore documents it kept (.affidavit/explore/*.jsonl) for each test's verdict.

Counted per suite: tests; passed plainly; of those, async or loop-driving tests the plugin explored or
listed as not explored (with reasons); tests red under explore that passed plainly, split by verdict
(`failure`, `timing_sensitive`) and by whether the failing schedule was the zero schedule (a red under
zero delays on a test that passes plainly is a difference between our loop and stock asyncio, never a
race; the first round's, and which went red in any round); wall times as ratios to plain; explore runs
per second. Nothing asserts: the table is printed and written to
bench/suites_results.json with the machine state beside it.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Optional, Tuple

import pairs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = os.path.join(ROOT, "build", "bench-env", "suites")
SRC = os.path.join(ROOT, "build", "bench-env", "suites-src")
LINK = os.path.join(ROOT, "build", "bench-env", "suites-affidavit")
REQ = os.path.join(ROOT, "bench", "requirements-suites.txt")

# name, sdist pin, test paths and the arguments the command line adds (why, beside each)
SUITES: List[Dict[str, Any]] = [
    {"name": "aiolimiter", "pin": "aiolimiter==1.3.0", "args": ["tests"]},
    {"name": "async-timeout", "pin": "async-timeout==5.0.1", "args": ["tests"]},
    # pytest-asyncio 1.5 errors (filterwarnings = error) on an unset fixture loop scope
    {"name": "async-lru", "pin": "async-lru==2.4.0",
     "args": ["tests", "-o", "asyncio_default_fixture_loop_scope=function"]},
    {"name": "aiostream", "pin": "aiostream==0.8.1", "args": ["tests"]},
    {"name": "janus", "pin": "janus==2.0.0", "args": ["tests"]},
    {"name": "culsans", "pin": "culsans==0.11.0", "args": ["tests"]},
    # the memory backend only: the redis and memcached tests need those servers
    {"name": "aiocache", "pin": "aiocache==0.12.3",
     "args": ["tests/ut", "--ignore=tests/ut/backends/test_redis.py",
              "--ignore=tests/ut/backends/test_memcached.py", "-m", "not redis and not memcached",
              "-o", "asyncio_default_fixture_loop_scope=function"]},
    # The five of bench/first_contact.py (POOL.md entries 1-9: aiodebug, cachettl, py-memoize and
    # aiopath ship no tests in their sdists). Each brings what its own suite needs; a pytest plugin
    # one of them installs (PLUGINS below) is turned off in every other suite's sessions.
    {"name": "looptime", "pin": "looptime==0.9", "args": ["tests"]},
    # its trio tests need pytest-trio, its FastAPI tests fastapi and httpx
    {"name": "pyleak", "pin": "pyleak==0.2.0", "args": ["tests"]},
    # test_posix.py runs each case with and without uvloop, in spawned processes
    {"name": "aiorun", "pin": "aiorun==2025.1.1", "args": ["tests"]},
    # the tests ship inside the package; two of them need Python 3.12 (asyncio.eager_task_factory)
    # and fail plainly on 3.11
    {"name": "later", "pin": "later==26.8.1", "args": ["later/tests"]},
    {"name": "unsync", "pin": "unsync==1.4.0", "args": ["test"]},
    # The three of bench/first_contact.py's third contact (POOL.md entries 10-13; aioprometheus has no
    # sdist that installs on Python 3.11).
    {"name": "asyncio-dgram", "pin": "asyncio-dgram==3.0.0", "args": ["test"]},
    # test_foo and test_passthrough make a real request to httpstat.us (a network service); the
    # suite has no pytest configuration, so its node ids are relative to the sources' pytest.ini
    {"name": "aresponses", "pin": "aresponses==3.0.0",
     "args": ["tests", "--deselect", "aresponses-3.0.0/tests/test_server.py::test_foo",
              "--deselect", "aresponses-3.0.0/tests/test_server.py::test_passthrough"]},
    # its tests that need its docker services (an HTTP bin, redis) are skipped by its own switches;
    # test_asyncio_record_replay connects to google.com:80 unguarded; its addopts carry -x
    {"name": "mocket", "pin": "mocket==3.15.0",
     "args": ["tests", "mocket", "--maxfail=0", "--deselect", "tests/test_asyncio.py::test_asyncio_record_replay"],
     "env": {"SKIP_TRUE_HTTP": "1", "SKIP_TRUE_REDIS": "1"}},
    # The five of bench/first_contact.py's fourth contact (POOL.md entries 14-21; asyncinotify,
    # aioprocessing and backoff ship no tests in their sdists). A suite whose sessions are long runs
    # fewer rounds ("rounds": its ratios are then one session each, marked "(1)" in the table).
    {"name": "aiounittest", "pin": "aiounittest==1.5.0", "args": ["tests"]},
    # 25 of its tests fail plainly on Python 3.11.7 (its email address parsing); one explore session
    # takes minutes (302 tests explored, most over real loopback sockets and TLS)
    {"name": "aiosmtplib", "pin": "aiosmtplib==5.1.3", "args": ["tests"], "rounds": 2},
    # aiomisc-pytest runs its tests on aiomisc's loop, uvloop's when uvloop is installed (it is: aiorun's)
    {"name": "aiofile", "pin": "aiofile==3.12.3", "args": ["tests"]},
    {"name": "stamina", "pin": "stamina==26.1.0", "args": ["tests"]},
    # its 9 tests wait for cron times in real time: a plain session takes 6 minutes
    {"name": "aiocron", "pin": "aiocron==2.1", "args": ["tests"], "rounds": 1},
    # The fifth and sixth contacts' suites that ship tests. Each runs in its own venv, made as at first
    # contact by bench/first_contact.py (build/bench-env/fc/NAME; its POOL entry holds the pin, the
    # arguments, the environment and the extras: they pin different versions of one package, such as
    # cryptography, so they cannot share this venv). Their sessions are long: two rounds.
    *({"name": n, "own_venv": True, "rounds": 2} for n in (
        "aiosqlite", "aiohttp-session", "sse-starlette", "async-upnp-client", "aiocoap", "blacksheep", "anyio",
        "starlette", "hikari")),
]

# The pytest plugins (pytest11 entry points) a suite's own requirements install into the shared venv:
# looptime's patches every pytest-asyncio loop it sees, even unasked, so each is kept to its own suite
# with -p no:NAME elsewhere (the other suites run as they did before these were installed).
PLUGINS: Dict[str, List[str]] = {
    "looptime": ["looptime_plugin", "looptime_timeproxies", "looptime_chronometers"],
    "pyleak": ["pyleak", "trio"],
    "aresponses": ["aresponses", "aiohttp"],
    "mocket": ["pook"],
    "aiosmtplib": ["hypothesispytest"],
    "aiofile": ["aiomisc"],
}


def plugin_args(s: Dict[str, Any]) -> List[str]:
    """-p no:NAME for every plugin another suite brought."""
    return [a for name, plugins in PLUGINS.items() if name != s["name"] for p in plugins for a in ("-p", f"no:{p}")]


def log(msg: str) -> None:
    print(f"suites: {msg}", file=sys.stderr, flush=True)


def run(cmd: List[str], **kw: Any) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def env_python(engine: str) -> str:
    """The suites' venv, made once from the interpreter the engine's venv was made with."""
    py = os.path.join(ENV, "bin", "python")
    venv_py = os.path.join(os.path.dirname(engine), "python")
    stamp = os.path.join(ENV, ".stamp")
    shared = [s for s in SUITES if not s.get("own_venv")]
    want = open(REQ, encoding="utf-8").read() + json.dumps([s["pin"] for s in shared])
    if not (os.path.exists(stamp) and open(stamp, encoding="utf-8").read() == want):
        base = run([venv_py, "-c", "import sys; print(sys._base_executable)"]).stdout.strip()
        shutil.rmtree(ENV, ignore_errors=True)
        log(f"creating {ENV} with {base}")
        run([base, "-m", "venv", ENV])
        pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        run(pip + ["-r", REQ])
        os.makedirs(SRC, exist_ok=True)
        for s in shared:
            run([py, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                 "--no-binary", ":all:", s["pin"], "-d", SRC])
        for sdist in glob.glob(os.path.join(SRC, "*.tar.gz")):
            with tarfile.open(sdist) as tf:
                tf.extractall(SRC, filter="data") if sys.version_info >= (3, 12) else tf.extractall(SRC)
        for s in shared:
            log(f"installing {s['pin']}")
            run(pip + [suite_dir(s)])
        # A section with no settings: pytest's search for a configuration file stops here, not in
        # this repository's own pyproject.toml, for a suite (culsans) that has none of its own.
        with open(os.path.join(SRC, "pytest.ini"), "w", encoding="utf-8") as f:
            f.write("[pytest]\n")
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(want)
    link_affidavit(py, venv_py, engine)
    return py


def own_venv(name: str, engine: str) -> Tuple[Dict[str, Any], str]:
    """A suite met at first contact, in its own venv: bench/first_contact.py's POOL entry and that venv's
    python (made if missing). This module's ENV, SRC and LINK then point at the suite's (the caller
    restores them)."""
    global ENV, SRC, LINK
    import first_contact  # it imports this module: imported here, when a suite needs it

    entry = next(e for e in first_contact.POOL if e["name"] == name)
    first_contact.use(name)  # its copy of this module's paths, for its fetch() and install()
    ENV, SRC, LINK = (os.path.join(first_contact.BASE, name, "venv"), os.path.join(first_contact.BASE, name, "src"),
                      os.path.join(first_contact.BASE, "affidavit-link"))
    first_contact.fetch(entry)
    saved = dict(os.environ)
    os.environ.update(entry.get("env", {}))  # a build switch (blacksheep's) its install needs
    try:
        return entry, first_contact.install(entry, engine)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def suite_dir(s: Dict[str, Any]) -> str:
    name, ver = s["pin"].split("==")
    for cand in (name, name.replace("-", "_")):
        d = os.path.join(SRC, f"{cand}-{ver}")
        if os.path.isdir(d):
            return d
    raise SystemExit(f"suites: no source directory for {s['pin']} under {SRC}")


def link_affidavit(py: str, venv_py: str, engine: str) -> None:
    """The suites' venv sees only affidavit's package and dist-info from the engine's venv."""
    site = run([venv_py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    shutil.rmtree(LINK, ignore_errors=True)
    os.makedirs(LINK)
    for entry in ["affidavit"] + [os.path.basename(p) for p in glob.glob(os.path.join(site, "affidavit-*.dist-info"))]:
        os.symlink(os.path.join(site, entry), os.path.join(LINK, entry))
    target = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    with open(os.path.join(target, "affidavit-bench.pth"), "w", encoding="utf-8") as f:
        f.write(LINK + "\n")
    exe = os.path.join(ENV, "bin", "affidavit")
    if os.path.lexists(exe):
        os.remove(exe)
    os.symlink(engine, exe)


def junit(path: str) -> Dict[str, str]:
    """nodeid-ish key -> outcome (passed, failed, error, skipped) from a JUnit XML file."""
    out: Dict[str, str] = {}
    if not os.path.exists(path):
        return out
    for case in ET.parse(path).getroot().iter("testcase"):
        key = f"{case.get('classname')}::{case.get('name')}"
        kinds = [child.tag for child in case]
        outcome = "failed" if "failure" in kinds else "error" if "error" in kinds else \
            "skipped" if "skipped" in kinds else "passed"
        # a teardown error is reported as a second testcase element: the worse outcome stands
        if out.get(key) in ("failed", "error"):
            continue
        out[key] = outcome
    return out


def failure_text(path: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    if not os.path.exists(path):
        return out
    for case in ET.parse(path).getroot().iter("testcase"):
        for child in case:
            if child.tag in ("failure", "error"):
                out[f"{case.get('classname')}::{case.get('name')}"] = (child.get("message") or "")[:300]
    return out


def session(py: str, s: Dict[str, Any], mode: str, explore: int, tag: str) -> Dict[str, Any]:
    cwd = suite_dir(s)
    xml = os.path.join(ROOT, "build", "bench-env", f"junit-{s['name']}-{tag}.xml")
    if os.path.exists(xml):
        os.remove(xml)
    for d in (cwd, SRC):
        shutil.rmtree(os.path.join(d, ".affidavit"), ignore_errors=True)
    cmd = [py, "-m", "pytest", *s["args"], *plugin_args(s), f"--junitxml={xml}"]
    if mode == "plain":
        cmd += ["-p", "no:affidavit"]
    elif mode == "explore":
        cmd += [f"--affidavit-explore={explore}"]
    env = dict(os.environ, **s.get("env", {}), AFFIDAVIT_PYTHON=py,
               PATH=os.path.join(ENV, "bin") + os.pathsep + os.environ["PATH"])
    env.pop("PYTEST_ADDOPTS", None)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    lines = p.stdout.splitlines()
    docs: List[Dict[str, Any]] = []
    for jl in glob.glob(os.path.join(cwd, ".affidavit", "explore", "*.jsonl")) + \
            glob.glob(os.path.join(SRC, ".affidavit", "explore", "*.jsonl")):
        with open(jl, encoding="utf-8") as f:
            docs += [json.loads(l) for l in f if l.strip()]
    return {"cmd": cmd[1:], "exit": p.returncode, "wall_s": wall, "outcomes": junit(xml),
            "failures": failure_text(xml), "last_line": lines[-1] if lines else "",
            "affidavit_lines": [l for l in lines if l.startswith("affidavit:") and " explored" in l],
            "internal_error": "INTERNALERROR" in p.stdout + p.stderr, "explore_docs": docs}


def async_tests(py: str, s: Dict[str, Any]) -> List[str]:
    """The suite's async tests, from a collect-only session with bench/suites_probe.py loaded."""
    out = os.path.join(ROOT, "build", "bench-env", f"async-{s['name']}.txt")
    env = dict(os.environ, SUITES_PROBE_OUT=out, PYTHONPATH=os.path.join(ROOT, "bench"))
    subprocess.run([py, "-m", "pytest", *s["args"], *plugin_args(s), "--collect-only", "-q", "-p", "suites_probe", "-p", "no:affidavit"],
                   cwd=suite_dir(s), capture_output=True, text=True, env=env)
    with open(out, encoding="utf-8") as f:
        return [l.strip() for l in f if l.strip()]


def key_of(nodeid: str) -> str:
    """A node id in JUnit's classname::name spelling (path dots, no .py)."""
    path, _, rest = nodeid.partition("::")
    parts = rest.split("::")
    cls = path[:-3].replace("/", ".") if path.endswith(".py") else path
    return ".".join([cls] + parts[:-1]) + "::" + parts[-1]


def tally(plain: Dict[str, Any], inactive: Dict[str, Any], exp: Dict[str, Any], asyncs: List[str]) -> Dict[str, Any]:
    passed = {k for k, v in plain["outcomes"].items() if v == "passed"}
    async_passed = {key_of(n) for n in asyncs} & passed
    explored_keys = {key_of(d.get("nodeid", "")) for d in exp["explore_docs"] if d.get("runs")}
    red = sorted(k for k in passed if exp["outcomes"].get(k) in ("failed", "error"))
    by_key = {key_of(d.get("nodeid", "")): d for d in exp["explore_docs"]}
    kinds: Dict[str, int] = {}
    zero_reds: List[str] = []
    rows = []
    for k in red:
        d = by_key.get(k)
        verdict = (d or {}).get("verdict") or ("failure" if d and d.get("found") else "not an explore result")
        kinds[verdict] = kinds.get(verdict, 0) + 1
        if d and d.get("failing_run") == 1:
            zero_reds.append(k)
        rows.append({"test": k, "verdict": verdict, "failing_run": (d or {}).get("failing_run"),
                     "schedule": (d or {}).get("schedule"), "text": exp["failures"].get(k, "")})
    lost = sorted(k for k in passed if k not in exp["outcomes"])
    verdicts: Dict[str, int] = {}
    for d in exp["explore_docs"]:
        v = d.get("verdict") or ("failure" if d.get("found") else "no_failure")
        verdicts[v] = verdicts.get(v, 0) + 1
    # closure.h: how many explored tests ended after the zero run (closed), ran only the schedules
    # past their timeouts (closed_below_deadlines), or stayed open, and why
    closure: Dict[str, int] = {}
    for d in exp["explore_docs"]:
        state = (d.get("closure") or {}).get("state") or "not checked"
        closure[state] = closure.get(state, 0) + 1
    not_explored = 0
    for line in exp["affidavit_lines"]:
        m = re.search(r"(\d+) not explored", line)
        if m:
            not_explored += int(m.group(1))
    return {
        "tests": len(plain["outcomes"]),
        "passed_plain": len(passed),
        "explored": sum(1 for d in exp["explore_docs"] if d.get("runs")),
        "not_explored": not_explored,
        "async_passed_plain": len(async_passed),
        # async tests that passed plainly with no explore result: each must be among the plugin's
        # not-explored count, so this number must not exceed it
        "async_passed_without_result": len(async_passed - explored_keys),
        "summary_lines": exp["affidavit_lines"],
        "explore_verdicts": verdicts,
        "closure": closure,
        "red": len(red),
        "red_by_verdict": kinds,
        "red_under_zero_schedule": zero_reds,
        "red_rows": rows,
        "missing_under_explore": lost,
        "internal_error": exp["internal_error"],
        "inactive_over_plain": inactive["wall_s"] / plain["wall_s"],
        "explore_over_plain": exp["wall_s"] / plain["wall_s"],
        "plain_s": plain["wall_s"], "inactive_s": inactive["wall_s"], "explore_s": exp["wall_s"],
        "runs": sum(int(d.get("runs") or 0) for d in exp["explore_docs"]),
    }


def machine() -> Dict[str, Any]:
    load = open("/proc/loadavg").read().split()[:3]
    thp = ""
    try:
        thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip()
    except OSError:
        pass
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return {"loadavg": load, "thp": thp, "cpu": cpu, "cores": os.cpu_count()}


def add_rounds(t: Dict[str, Any], got: List[Dict[str, Dict[str, Any]]]) -> None:
    """The ratios from every round's pair (median, range, the pairs), the runs per second of the
    explore sessions, and the tests that went red in any round, not only the first."""
    if len(got) >= pairs.MIN_PAIRS:
        t["explore_over_plain_pairs"] = pairs.summarize([(g["plain"]["wall_s"], g["explore"]["wall_s"]) for g in got])
        t["inactive_over_plain_pairs"] = pairs.summarize([(g["plain"]["wall_s"], g["inactive"]["wall_s"]) for g in got])
        t["explore_over_plain"] = t["explore_over_plain_pairs"]["median"]
        t["inactive_over_plain"] = t["inactive_over_plain_pairs"]["median"]
    # else (--rounds below pairs.MIN_PAIRS, a check that the suite runs): the first round's ratios
    # stand, one session each, and the table says so with "(1)"
    rates = [sum(int(d.get("runs") or 0) for d in g["explore"]["explore_docs"]) / g["explore"]["wall_s"] for g in got]
    t["runs_per_s_median"] = pairs.median(rates)
    red = set()
    for g in got:
        passed = {k for k, v in g["plain"]["outcomes"].items() if v == "passed"}
        red |= {k for k in passed if g["explore"]["outcomes"].get(k) in ("failed", "error")}
    t["red_any_round"] = sorted(red)


def main(argv: List[str]) -> int:
    explore = 30
    rounds = pairs.MIN_PAIRS
    only: Optional[List[str]] = None
    engine = os.path.join(ROOT, ".venv", "bin", "affidavit")
    out = os.path.join(ROOT, "bench", "suites_results.json")
    it = iter(argv)
    for a in it:
        if a == "--table":
            with open(os.path.join(ROOT, "bench", "suites_results.json"), encoding="utf-8") as f:
                print(table(json.load(f)))
            return 0
        if a == "--explore":
            explore = int(next(it))
        elif a == "--rounds":
            rounds = int(next(it))
        elif a == "--only":
            only = next(it).split(",")
        elif a == "--affidavit":
            engine = os.path.abspath(next(it))
        elif a == "--out":
            out = os.path.abspath(next(it))
        else:
            print(f"usage: suites.py [--explore N] [--rounds N] [--only NAME,...] [--affidavit PATH] [--out FILE] (not {a!r})",
                  file=sys.stderr)
            return 2
    chosen = [s for s in SUITES if not only or s["name"] in only]
    py = env_python(engine) if any(not s.get("own_venv") for s in chosen) else ""
    results: Dict[str, Any] = {"machine_before": machine(), "explore": explore, "rounds": rounds, "suites": {}}
    global ENV, SRC, LINK
    shared_paths = (ENV, SRC, LINK)
    for s in SUITES:
        if only and s["name"] not in only:
            continue
        n = min(rounds, int(s.get("rounds", rounds)))
        s_py = py
        if s.get("own_venv"):
            s, s_py = own_venv(s["name"], engine)
        log(f"{s['name']}: {n} rounds of plain, inactive, explore={explore}")
        got = []
        for i in range(n):
            # the order flips every round, so that neither end is always the one that runs warm
            order = ("plain", "inactive", "explore") if i % 2 == 0 else ("explore", "inactive", "plain")
            got.append({mode: session(s_py, s, mode, explore, f"{mode}-{i}") for mode in order})
        t = tally(got[0]["plain"], got[0]["inactive"], got[0]["explore"], async_tests(s_py, s))
        ENV, SRC, LINK = shared_paths
        add_rounds(t, got)
        t["pin"] = s["pin"]
        t["args"] = s["args"]
        results["suites"][s["name"]] = t
        log(f"{s['name']}: {t['passed_plain']}/{t['tests']} pass plainly; explore: {t['red']} red "
            f"{t['red_by_verdict']} (red in any round: {len(t['red_any_round'])}), "
            f"{len(t['red_under_zero_schedule'])} under zero delays; explore / plain "
            f"{ratio_cell(t, 'explore', '.1f')}")
        log(f"  closure: {t['closure']}; {t['runs']} runs in the first round's explore session")
        for line in t["summary_lines"]:
            log(f"  {line}")
    results["machine_after"] = machine()
    print(table(results))
    with open(out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    return 0


def ratio_cell(t: Dict[str, Any], what: str, fmt: str) -> str:
    p = t.get(f"{what}_over_plain_pairs")
    if not p:  # a result from before the rounds: one session each
        return f"{t[f'{what}_over_plain']:{fmt}}x (1)"  # or from a --rounds check below MIN_PAIRS
    return f"{p['median']:{fmt}}x ({p['min']:{fmt}}-{p['max']:{fmt}})"


def table(r: Dict[str, Any]) -> str:
    head = f"{'suite':<14} {'tests':>5} {'pass':>5} {'async':>5} {'explored':>8} {'not':>4} {'red':>4} {'race':>5} {'timing':>6} " \
           f"{'zero':>5} {'listed':>6} {'inactive / plain':>22} {'explore / plain':>19} {'runs/s':>6}"
    out = [head, "-" * len(head)]
    for name, t in r["suites"].items():
        k = t["red_by_verdict"]
        out.append(f"{name:<14} {t['tests']:>5} {t['passed_plain']:>5} {t['async_passed_plain']:>5} {t['explored']:>8} {t['not_explored']:>4} {t['red']:>4} "
                   f"{k.get('failure', 0):>5} {k.get('timing_sensitive', 0):>6} "
                   f"{len(t['red_under_zero_schedule']):>5} {t['explore_verdicts'].get('timing_sensitive', 0):>6} "
                   f"{ratio_cell(t, 'inactive', '.2f'):>22} "
                   f"{ratio_cell(t, 'explore', '.1f'):>19} {t.get('runs_per_s_median', 0):>6.0f}")
    out.append("pass: passed plainly; async: of those, async tests; explored: tests with an explore result; not: the plugin's own count of tests not explored; "
               "red: passed plainly, failed under explore; "
               "race: red with verdict failure; timing: red with verdict timing_sensitive (only under --affidavit-strict-timing); zero: red under "
               "the zero schedule (a loop difference, never a race); listed: timing_sensitive results listed apart, "
               "not red; ratios: wall time over the plain session, median (range) of the rounds' interleaved pairs; "
               "runs/s: explore runs per second of the explore session, median")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
