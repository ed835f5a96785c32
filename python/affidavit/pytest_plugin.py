"""pytest --affidavit: make the flaky async tests of an existing suite testify. No annotations.

Registered through the ``pytest11`` entry point, so every pytest that has affidavit installed has
it; it does nothing unless asked:

- ``--affidavit``: the suite runs as usual; each test that failed is investigated after the
  session (the engine: rate, failing schedule, minimal cause, a fix proposed and verified) within
  ``--affidavit-budget`` seconds, and a short block per test is printed at the end. Under
  pytest-xdist the investigations run in the controller once the workers are done.
- ``--affidavit-explore=N``: each async test that passed also runs under N controlled schedules;
  one that fails under any of them fails the test, with its token (a latent race, found before CI
  finds it). ``--affidavit-shard=K/N`` splits those schedules so N CI jobs explore disjoint sets.
  ``--affidavit-explore=systematic`` (or the strategy ``systematic``) runs every schedule with at
  most K delays instead (``affidavit_max_delays``, default 2), within SYSTEMATIC_RUNS runs a test.
- ``@pytest.mark.affidavit_replay("afd1:...")`` and ``--affidavit-replay=TOKEN``: run the test
  under that schedule exactly.

Settings come from the command line, then ``-o``/ini options (``affidavit_budget``,
``affidavit_explore``, ``affidavit_strategy``, ``affidavit_slow_step``, ``affidavit_report_dir``),
then ``[tool.affidavit]`` in pyproject.toml (``budget``, ``explore``, ``strategy``, ``slow_step``,
``report_dir``). All the work is the engine's (C); this module only asks it and reports.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, Generator, Iterator, List, Optional, Set, Tuple

import pytest

from affidavit._verdicts import WORDS as VERDICT_WORDS
from affidavit import session_fixtures
from affidavit import alone
from affidavit.alone import OUT as ALONE_OUT
from affidavit.engine_session import EngineSession

DEFAULTS: Dict[str, str] = {"budget": "60", "explore": "0", "strategy": "portfolio", "slow_step": "100",
                            "report_dir": ".affidavit", "max_delays": "2"}
# the run bound of --affidavit-explore=systematic: examples/test_two_windows.py needs 2952 of its
# estimated 3945 schedules with at most 2 delays (1711 of 2706 at 355b9ad, the cause of the growth not yet known)
SYSTEMATIC_RUNS = 4000
INI_HELP = {
    "budget": "seconds per failed test for its investigation (default 60)",
    "explore": "controlled schedules to run each passing async test under (default 0: off)",
    "strategy": "exploration strategy: portfolio, zero, jitter, pct or systematic",
    "max_delays": "the systematic strategy's bound: schedules with at most this many delays (default 2)",
    "slow_step": "a step this long (ms) is reported as slow",
    "report_dir": "where incidents and reports go (default .affidavit, beside the store)",
}
BOOL_INI_HELP = {
    "strict": "a test --affidavit-explore could not explore fails the session (default false)",
    "strict_timing": "a timing_sensitive exploration result fails the test (default false)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("affidavit", "affidavit: make flaky asyncio tests testify")
    group.addoption("--affidavit", action="store_true", default=False,
                    help="investigate every failed test after the session (cause, fix, report)")
    group.addoption("--affidavit-budget", type=float, default=None, metavar="SECONDS",
                    help="seconds per failed test for its investigation (default 60)")
    group.addoption("--affidavit-explore", default=None, metavar="N|systematic",
                    help="also run each passing async test under N controlled schedules, or (systematic) "
                         "under every schedule with at most K delays")
    group.addoption("--affidavit-shard", default=None, metavar="K/N",
                    help="explore only the K-th of N disjoint shares of the schedules")
    group.addoption("--affidavit-replay", default=None, metavar="TOKEN",
                    help="run the selected async test under this schedule (one test)")
    group.addoption("--affidavit-strict", action="store_true", default=None,
                    help="with --affidavit-explore: a test that could not be explored fails the session")
    group.addoption("--affidavit-strict-timing", action="store_true", default=None,
                    help="with --affidavit-explore: a timing_sensitive result (a test's own time threshold "
                         "crossed by a slow step, not a race) fails the test")
    for name, text in INI_HELP.items():
        parser.addini(f"affidavit_{name}", text, default=None)
    for name, text in BOOL_INI_HELP.items():
        parser.addini(f"affidavit_{name}", text, type="bool", default=False)


@dataclass
class Settings:
    investigate: bool
    budget: float
    explore: int
    shard: Optional[str]
    strategy: str
    slow_step: float
    report_dir: str
    replay: Optional[str]
    strict: bool = False
    strict_timing: bool = False
    max_delays: int = 2


def _pyproject_table(config: pytest.Config) -> Dict[str, Any]:
    path = os.path.join(str(config.rootpath), "pyproject.toml")
    if not os.path.exists(path):
        return {}
    try:
        import tomllib  # Python 3.11+
    except ImportError:  # 3.10: pytest's own TOML reader
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            return {}
    with open(path, "rb") as f:
        table = tomllib.load(f).get("tool", {}).get("affidavit", {})
    return table if isinstance(table, dict) else {}


def _explore_runs(value: str) -> int:
    """--affidavit-explore's runs: a number, or `systematic` (its own bound, SYSTEMATIC_RUNS)."""
    return SYSTEMATIC_RUNS if value == "systematic" else int(value)


def _settings(config: pytest.Config) -> Settings:
    table = _pyproject_table(config)

    def pick(name: str, cli: Any) -> str:
        if cli is not None:  # the command line wins
            return str(cli)
        ini = config.getini(f"affidavit_{name}")
        if ini not in (None, "", []):
            return str(ini)
        if name in table:
            return str(table[name])
        return DEFAULTS[name]

    opt = config.option
    try:
        s = Settings(
            investigate=bool(opt.affidavit),
            budget=float(pick("budget", opt.affidavit_budget)),
            explore=_explore_runs(pick("explore", opt.affidavit_explore)),
            shard=opt.affidavit_shard,
            strategy=("systematic" if pick("explore", opt.affidavit_explore) == "systematic"
                      else pick("strategy", None)),
            max_delays=int(pick("max_delays", None)),
            slow_step=float(pick("slow_step", None)),
            report_dir=pick("report_dir", None),
            replay=opt.affidavit_replay,
            strict=bool(opt.affidavit_strict or config.getini("affidavit_strict")),
            strict_timing=bool(opt.affidavit_strict_timing or config.getini("affidavit_strict_timing")),
        )
    except ValueError as exc:
        raise pytest.UsageError(f"affidavit: a setting is not a number: {exc}") from None
    if s.strategy == "systematic" and s.shard:
        raise pytest.UsageError("affidavit: --affidavit-shard splits the random portfolio; the systematic "
                                "search is one ordered enumeration")
    if not 0 <= s.max_delays <= 4:
        raise pytest.UsageError("affidavit: max_delays must be between 0 and 4")
    if s.budget <= 0 or s.explore < 0:
        raise pytest.UsageError("affidavit: the budget must be positive and explore at least 0")
    if s.shard is not None:
        k, _, n = s.shard.partition("/")
        if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
            raise pytest.UsageError(f"affidavit: --affidavit-shard takes K/N with 1 <= K <= N, not {s.shard!r}")
    return s


def _engine() -> str:
    named = os.environ.get("AFFIDAVIT_ENGINE")  # another engine build (and the tests' fake engines)
    if named:
        return named
    beside = os.path.join(os.path.dirname(sys.executable), "affidavit")
    found = beside if os.access(beside, os.X_OK) else shutil.which("affidavit")
    if not found:
        raise pytest.UsageError("affidavit: the affidavit engine is not installed beside this Python")
    return found


# Environment variables that make a Python process measure coverage and write its data where the
# session's goes (pytest-cov's subprocess support, coverage's own process startup): the engine's
# workers are not the session's tests, and their data would be mixed into the session's.
_COVERAGE_ENV = ("COV_CORE_", "COVERAGE_PROCESS_START")


# sys.path's first entry when the plugin was imported, as a real path: `python -m pytest` puts the
# directory the session started in there ("" under -c), the `pytest` script its own directory
_STARTED_ON_PATH = os.path.realpath(sys.path[0] or os.curdir) if sys.path else ""


def _engine_env(config: pytest.Config, settings: Settings) -> Dict[str, str]:
    """The engine keeps its store and reports in report_dir (relative to the rootdir)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_COVERAGE_ENV)}
    env["AFFIDAVIT_DIR"] = os.path.join(str(config.rootpath), settings.report_dir)
    # the workers run the session's own interpreter, whatever engine PATH finds: another Python
    # would import other packages (or none of the suite's)
    env.setdefault("AFFIDAVIT_PYTHON", sys.executable)
    # `python -m pytest` put the directory it was started in on sys.path; the workers start in the
    # rootdir, and a suite that imports modules beside it (its `tests` directory as a package) must
    # find them there too, as its own session did
    start = os.path.realpath(str(config.invocation_params.dir))
    if start != os.path.realpath(str(config.rootpath)) and _STARTED_ON_PATH == start:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (start, env.get("PYTHONPATH", "")) if p)
    return env


def _is_async(item: pytest.Item) -> bool:
    """Whether the test is a coroutine (or anyio's): as seen at collection (ExploreHooks tags each
    item), since pytest-asyncio 0.21 to 0.25 replace ``item.obj`` by a sync wrapper for the call."""
    known = getattr(item, "_affidavit_async", None)
    return bool(known) if known is not None else _coroutine_test(item)


def _coroutine_test(item: pytest.Item) -> bool:
    try:
        fn = getattr(item, "obj", None)
        inner = inspect.unwrap(fn) if callable(fn) else fn
        if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(inner):
            return True
    except Exception:  # an item whose obj cannot be read or unwrapped is no coroutine we can name
        pass
    return item.get_closest_marker("anyio") is not None


def _in_worker() -> bool:
    """Whether this process is an affidavit worker (worker.py), where the plugin is loaded so that
    its options and ini keys exist for the user's configuration, and does nothing else."""
    worker = sys.modules.get("affidavit.worker")
    return bool(getattr(worker, "ACTIVE", False))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "affidavit_replay(token): run this async test under the affidavit schedule the token names")
    if _in_worker() or os.environ.get(ALONE_OUT):  # alone.py's pytest is plain
        return
    # Only the hooks a session asked for are registered: a suite that uses none of affidavit pays
    # for the replay mark's check at collection and nothing per test.
    settings = _settings(config)
    config.pluginmanager.register(ReplayHooks(settings), "affidavit-replay")
    if settings.explore:
        config.pluginmanager.register(ExploreHooks(config, settings), "affidavit-explore")
    if settings.investigate:
        config.pluginmanager.register(InvestigateHooks(config, settings), "affidavit-investigate")


@dataclass
class Finding:
    nodeid: str
    data: Optional[Dict[str, Any]] = None
    error: str = ""


class ReplayHooks:
    """The affidavit_replay mark and --affidavit-replay: the test runs under that schedule."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.marked = False

    def pytest_collection_modifyitems(self, config: pytest.Config, items: List[pytest.Item]) -> None:
        if self.settings.replay:
            if len(items) != 1:
                raise pytest.UsageError(
                    f"affidavit: --affidavit-replay runs one test; {len(items)} are selected (give its node id)")
            items[0].add_marker(pytest.mark.affidavit_replay(self.settings.replay))
        for item in items:
            mark = item.get_closest_marker("affidavit_replay")
            if mark is None:
                continue
            if not mark.args or not isinstance(mark.args[0], str):
                raise pytest.UsageError(f"affidavit: {item.nodeid}: affidavit_replay takes the token as its argument")
            if not inspect.iscoroutinefunction(getattr(item, "obj", None)):
                raise pytest.UsageError(f"affidavit: {item.nodeid}: affidavit_replay marks async tests only")
            item._affidavit_coro = item.obj  # type: ignore[attr-defined]  # before a plugin wraps it
            self.marked = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Optional[bool]:
        coro = getattr(pyfuncitem, "_affidavit_coro", None) if self.marked else None
        if coro is None:
            return None
        mark = pyfuncitem.get_closest_marker("affidavit_replay")
        assert mark is not None
        import affidavit

        names = pyfuncitem._fixtureinfo.argnames  # the test's own parameters
        args = {name: pyfuncitem.funcargs[name] for name in names}
        affidavit.replay(mark.args[0])(coro)(**args)
        return True


# The user property a call report carries its exploration's outcome in: read back by
# pytest_runtest_logreport, in this process or, under pytest-xdist, in the controller.
_PROP = "affidavit_explore"
# The options of a session that never reach a worker: they would write where the session writes
# (junitxml, a --basetemp pytest empties at the start, coverage data), run more processes, or stop
# for a debugger. The positional test paths never do either: the worker runs one node id.
_NOT_FOR_WORKERS = {"numprocesses", "maxprocesses", "dist", "tx", "rsyncdir", "looponfail", "xmlpath",
                    "basetemp", "usepdb", "usepdb_cls", "trace", "htmlpath", "collectonly", "version", "help"}
# Options whose value is a path, made absolute: the engine's workers run in the rootdir, not in the
# directory pytest was started from.
_PATH_OPTIONS = {"rootdir", "inifilename", "confcutdir"}
_FOREIGN_LOOP = re.compile(r"ran its own event loop \((.+)\), which affidavit does not control")
_OUR_POLICY = "affidavit.loop.ControlledPolicy"


def _worker_args(config: pytest.Config) -> List[str]:
    """The session's own command-line arguments that configure how a test runs (-o, -W, -p, -c,
    --rootdir, --confcutdir, --import-mode, a conftest's own options...), for the workers: those of
    config.invocation_params.args minus the positional test paths, affidavit's own options and
    _NOT_FOR_WORKERS. The ini file's addopts and PYTEST_ADDOPTS apply in the workers by themselves."""
    actions = getattr(getattr(config, "_parser", None), "optparser", None)
    table: Dict[str, Any] = getattr(actions, "_option_string_actions", {})
    here = str(config.invocation_params.dir)
    args = list(config.invocation_params.args)
    out: List[str] = []
    i = 0
    while i < len(args):
        arg = str(args[i])
        i += 1
        if arg == "--":
            break  # only positional arguments follow
        if not arg.startswith("-") or arg == "-":
            continue  # a test path
        name, eq, value = arg.partition("=")
        action = table.get(name) if arg.startswith("--") else table.get(arg[:2])
        if action is None:
            out.append(arg)  # not pytest's (grouped short flags, say): given as it came
            continue
        # argparse: flags (store_true, count, ...) have nargs 0; "?" takes a value only attached
        takes = action.nargs not in (0, "?")
        attached = bool(eq) if arg.startswith("--") else len(arg) > 2
        if not attached and takes and i < len(args):
            value = str(args[i])
            i += 1
        elif not arg.startswith("--") and attached:
            name, value = arg[:2], arg[2:]
        dest = action.dest or ""
        if dest.startswith(("affidavit", "cov")) or dest in _NOT_FOR_WORKERS:
            continue
        if not takes:
            out.append(arg)
            continue
        if dest in _PATH_OPTIONS:
            value = os.path.join(here, value)
        out.append(f"{name}={value}" if name.startswith("--") else name)
        if not name.startswith("--"):
            out.append(value)
    return out


@contextlib.contextmanager
def _outside_alarm() -> Iterator[None]:
    """Runs the block with the process's real-time interval timer (SIGALRM) stopped, and starts
    it again after with the time it had left. pytest-timeout's default method on POSIX, and a
    conftest's own timeout, arm that timer around the test: exploring the test after its call is
    not the test's own time, and each controlled run has the test's timeout inside the worker."""
    timer = getattr(signal, "setitimer", None)
    if timer is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    left, interval = timer(signal.ITIMER_REAL, 0)
    try:
        yield
    finally:
        if left > 0:
            timer(signal.ITIMER_REAL, left, interval)


class ExploreHooks:
    """--affidavit-explore=N: a passing async test that a controlled schedule breaks fails, and
    every test that could not be explored is counted with its reason in the terminal summary."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.args = _worker_args(config)
        self.explored = 0
        self.closed = 0  # explored tests whose every schedule runs the zero schedule's run
        self.failed: List[str] = []
        self.timing: List[Tuple[str, str]] = []  # (node id, summary)
        self.unconfirmed: List[Tuple[str, str]] = []  # (node id, why): a failure that is not a failing schedule
        self.not_explored: Dict[str, List[str]] = {}  # reason -> node ids, in the order seen
        self.loops: Dict[str, str] = {}  # node id -> the class of the loop a sync test ran
        self.passed_call: Set[str] = set()  # tests whose call passed, explored after their teardown
        self.files: List[str] = []  # the session's test files, relative to the rootdir
        self.engine: Optional[EngineSession] = None  # started by the first test explored
        self.per_file: Dict[str, EngineSession] = {}  # when the session's engine cannot start
        self.unrun: Dict[str, str] = {}  # node id -> why an async test's plain run did not pass
        self.ran_no_loop: Set[str] = set()  # sync tests whose call ran no asyncio loop
        self.no_loop = 0  # counted from the reports: sync tests that ran no loop
        self.errors: List[str] = []  # the plugin's own failures, one line each, for the summary
        self.shared: Dict[Any, str] = {}  # a set-up fixture of a wider scope -> what copies would share

    def _shard_path(self) -> str:
        shard = (self.settings.shard or "1/1").replace("/", "-of-")
        return os.path.join(str(self.config.rootpath), self.settings.report_dir, "explore", f"shard-{shard}.jsonl")

    @contextlib.contextmanager
    def _guard(self, hook: str) -> Iterator[None]:
        """Nothing may escape a hook: pytest would end the session with an INTERNALERROR. A
        failure of the plugin's own is one line of the summary instead; the tests' outcomes stand."""
        try:
            yield
        except (Exception, pytest.fail.Exception, pytest.skip.Exception) as exc:
            self.errors.append(f"{hook}: {type(exc).__name__}: {_first_line(str(exc))}")

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Each session starts its own results file: before pytest-xdist starts its workers, which
        append to it."""
        if hasattr(self.config, "workerinput"):
            return
        path = self._shard_path()
        try:
            if os.path.exists(path):
                open(path, "w", encoding="utf-8").close()
        except OSError:  # then each result's write fails too, and says so where it is counted
            pass

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Generator[None, Any, Any]:
        """What a fixture of a wider scope than the test (class, module, package, session) changes
        outside pytest's temporary directories while it is set up: its instance lives on in the
        session while a test that uses it is explored, and each copy of the test makes and tears
        down its own (a directory of the project, a fixed port), under the session's."""
        if str(getattr(fixturedef, "scope", "function")) == "function":
            return (yield)
        _make_basetemp(self.config)
        outer = session_fixtures.watch_begin(lambda: _temp_roots(self.config))
        try:
            return (yield)
        finally:
            seen = session_fixtures.watch_end(outer)
            if seen:
                self.shared[fixturedef] = _relative(seen, str(self.config.rootpath))

    def pytest_fixture_post_finalizer(self, fixturedef: Any) -> None:
        self.shared.pop(fixturedef, None)

    def _shares(self, item: pytest.Item) -> str:
        """Why copies of the test would share what the session holds set up, "" if they would not."""
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        for name in getattr(item, "fixturenames", ()):
            for fd in defs.get(name, ())[-1:]:
                if fd in self.shared and getattr(fd, "cached_result", None) is not None:
                    return (f"the session's {fd.scope} fixture {name} is set up, and {self.shared[fd]}: "
                            f"each copy of the test would make and tear down its own under it "
                            f"(`affidavit explore` explores it alone)")
        return ""

    def pytest_collection_modifyitems(self, items: List[pytest.Item]) -> None:
        """Which tests are coroutines is read now: pytest-asyncio 0.21 to 0.25 hide it during the
        call behind a sync wrapper (1.x does not), whichever fixture (its own or a suite's
        ``event_loop``) gives the loop."""
        with self._guard("pytest_collection_modifyitems"):
            for item in items:
                item._affidavit_async = _coroutine_test(item)  # type: ignore[attr-defined]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        """A sync test is explored when it ran an asyncio loop (asyncio.run, run_until_complete):
        seen by wrapping BaseEventLoop.run_forever, which both go through, during its call only."""
        if _is_async(item):
            return (yield)
        import asyncio

        stock = asyncio.BaseEventLoop.run_forever
        ran: List[type] = []

        def run_forever(loop: asyncio.BaseEventLoop) -> None:
            if not ran:
                ran.append(type(loop))
            return stock(loop)

        asyncio.BaseEventLoop.run_forever = run_forever  # type: ignore[method-assign]
        try:
            return (yield)
        finally:
            asyncio.BaseEventLoop.run_forever = stock  # type: ignore[method-assign]
            if ran:
                self.loops[item.nodeid] = f"{ran[0].__module__}.{ran[0].__qualname__}"
            else:
                self.ran_no_loop.add(item.nodeid)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        """A test is explored after its own teardown, never while its plain run's fixtures are
        still set up: that would be two runs of one test at once (a fixture's fixed port, its
        files). Its call passed; the exploration's verdict goes on the teardown report, red when
        a controlled schedule fails it (pytest shows an error at teardown)."""
        report = yield
        # Nothing may escape a hook: pytest would end the session with an INTERNALERROR. A
        # timeout's pytest.fail (an OutcomeException, not an Exception) included.
        try:
            status = self._status(item, call.when, report)
        except (Exception, pytest.fail.Exception, pytest.skip.Exception) as exc:
            status = f"not explored: the exploration failed in the plugin: {type(exc).__name__}: {_first_line(str(exc))}"
        if status:
            report.user_properties.append((_PROP, status))
        return report

    def _status(self, item: pytest.Item, when: str, report: pytest.TestReport) -> str:
        """What the phase's report says of the test's exploration, on its teardown report: its
        verdict; why an async test was not explored; or that a sync test ran no loop."""
        nodeid = item.nodeid
        replayed = item.get_closest_marker("affidavit_replay") is not None
        if when != "teardown":
            if report.passed and when == "call" and not replayed and (_is_async(item) or nodeid in self.loops):
                self.passed_call.add(nodeid)
            elif not report.passed and _is_async(item) and not replayed:
                self.unrun.setdefault(nodeid, _unrun_reason(when, report))
            return ""
        if nodeid in self.unrun:
            return "not explored: " + self.unrun.pop(nodeid)
        if nodeid in self.ran_no_loop:
            self.ran_no_loop.discard(nodeid)
            return "ran no loop"
        if nodeid not in self.passed_call:
            return ""
        self.passed_call.discard(nodeid)
        if not report.passed:  # its own teardown failed: it says so, and nothing is explored
            return ""
        shares = self._shares(item)
        if shares:
            return "not explored: " + shares
        with _outside_alarm():
            return self._verdict(item, report)

    def _verdict(self, item: pytest.Item, report: pytest.TestReport) -> str:
        """Explores the test; turns its report red for a failure; returns the status to count."""
        found = self._explore(item.nodeid)
        if found.get("error"):
            return "not explored: " + _reason(str(found["error"]), item.nodeid)
        confirm = found.get("confirm") or {}
        unwoken = confirm.get("unwoken")
        misuse = ("" if unwoken is None else f"; the thread {unwoken or '(unnamed)'} queued a callback with call_soon, "
                  "not call_soon_threadsafe, while the loop waited, which asyncio's loop is not woken by")
        if found.get("verdict") == "unconfirmed":
            return (f"unconfirmed: a schedule failed once, then {confirm.get('failed')}/{confirm.get('runs')} "
                    f"when replayed alone (the test depends on something no schedule controls){misuse}")
        if found.get("verdict") == "abstained":
            return (f"unconfirmed: abstained: it fails only with the thread {confirm.get('thread') or '(unnamed)'} "
                    f"working in real time, whose progress no schedule controls{misuse}")
        if not found.get("found"):
            closure = found.get("closure") or {}
            return "explored, closed" if closure.get("closed") else "explored"
        verdict = found.get("verdict") or "failure"
        timing = found.get("timing") or {}
        # Listed apart, not red: nothing to clear. Its check already ran the same schedule below the
        # threshold, alone in a fresh fork of the worker, and it passed every time, which a test that
        # fails whenever it runs without the tests before it does not (and a plain pytest process per
        # listed test cost a suite of 28 thresholds 30 s).
        if verdict == "timing_sensitive" and not self.settings.strict_timing:
            return "timing_sensitive: " + str(timing.get("summary") or "fails only when a step outlasts a timer") + misuse
        if self._fails_alone(item.nodeid, str(found.get("failure") or "")):
            return "not explored: " + _ALONE
        cause = (str(timing.get("summary")) if verdict == "timing_sensitive" and timing.get("summary")
                 else self._cause(item.nodeid))
        kind = "a timing threshold (timing_sensitive)" if verdict == "timing_sensitive" else "a controlled schedule"
        report.outcome = "failed"
        report.longrepr = (
            f"affidavit: passed on its own, but fails under {kind} "
            f"(run {found.get('failing_run')} of {found.get('runs')}, {found.get('schedule')}):\n"
            f"  {found.get('failure')}\n"
            + (f"  token:  {found.get('token')}\n"
               f"  replay: {shlex.join(['affidavit', 'replay', str(found.get('token')), item.nodeid, *self._pytest_args()])}\n"
               if found.get("token") else
               f"  no token: replayed alone it failed {confirm.get('failed')}/{confirm.get('runs')} times "
               f"(a real wait decides each)\n")
            + f"  cause:  {cause}"
        )
        return "timing_sensitive, failed" if verdict == "timing_sensitive" else "failure"

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        with self._guard("pytest_runtest_logreport"):
            self._count(report)

    def _count(self, report: pytest.TestReport) -> None:
        for prop in report.user_properties:  # anything may be there: a test's or a plugin's own
            if not (isinstance(prop, tuple) and len(prop) == 2 and prop[0] == _PROP):
                continue
            status = prop[1]
            status = str(status)
            if status == "ran no loop":
                self.no_loop += 1
                continue
            if status.startswith("not explored: "):
                self.not_explored.setdefault(status[len("not explored: "):], []).append(report.nodeid)
                continue
            self.explored += 1
            if status.startswith("timing_sensitive: "):
                self.timing.append((report.nodeid, status[len("timing_sensitive: "):]))
            elif status.startswith("unconfirmed: "):
                why = status[len("unconfirmed: "):]
                self.unconfirmed.append((report.nodeid, why[len("abstained: "):] if why.startswith("abstained: ")
                                         else "unconfirmed: " + why))
            elif status == "explored, closed":
                self.closed += 1
            elif status != "explored":
                self.failed.append(report.nodeid)

    def _cause(self, nodeid: str) -> str:
        """The minimal cause, from an investigation within the budget (its incident is stored)."""
        cmd = [_engine(), "investigate", nodeid, "--json", "--seconds", f"{max(5.0, self.settings.budget / 2):g}",
               *self._pytest_args()]
        try:
            p = subprocess.run(cmd, cwd=str(self.config.rootpath), capture_output=True, text=True,
                               timeout=self.settings.budget, env=_engine_env(self.config, self.settings))
            d = json.loads(p.stdout) if p.stdout.strip().startswith("{") else {}
        except subprocess.TimeoutExpired:
            return f"not found within the budget of {self.settings.budget:g} s (pytest --affidavit investigates it)"
        summary = (d.get("cause") or {}).get("summary")
        window = d.get("window") or {}
        if not summary:
            return f"not named ({d.get('verdict', 'no result')}); pytest {shlex.quote(nodeid)} --affidavit investigates it"
        if window.get("fails_at_us") is not None:
            summary += f"; fails when {window.get('task')} step {window.get('step')} is delayed by more than " \
                       f"{window['fails_at_us']:.1f} us"
        return summary + (f" (report: {d['report']})" if d.get("report") else "")

    def _fails_alone(self, nodeid: str, failure: str) -> bool:
        return alone.fails_alone(nodeid, failure, sys.executable, self.args, str(self.config.rootpath),
                                 _engine_env(self.config, self.settings), self.settings.budget)

    def _pytest_args(self) -> List[str]:
        return [f"--pytest-arg={a}" for a in self.args]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The files the session's tests come from, in order: what the session's one engine
        collects (engine_session.py)."""
        root = str(self.config.rootpath)
        seen: Dict[str, None] = {}
        with self._guard("pytest_collection_finish"):
            for item in session.items:
                path = os.path.relpath(str(item.path), root)
                if not path.startswith(".."):  # a test outside the rootdir has no node id to name it by
                    seen.setdefault(path, None)
        self.files = list(seen)

    def _new_engine(self, files: List[str]) -> EngineSession:
        cmd = [_engine(), "explore", "--stdin", *(files or ["."]), "--runs", str(self.settings.explore),
               "--strategy", self.settings.strategy, "--json", *self._pytest_args()]
        if self.settings.shard:
            cmd += ["--shard", self.settings.shard]
        if self.settings.strategy == "systematic":
            cmd += ["--max-delays", str(self.settings.max_delays)]
        return EngineSession(cmd, str(self.config.rootpath), _engine_env(self.config, self.settings),
                             max(60.0, self.settings.budget * 2))

    def _explore(self, nodeid: str) -> Dict[str, Any]:
        """One engine for the session's files; when it cannot start (a conftest or a file that a
        worker cannot load stops the whole collection), one engine per file, so that one file's
        reason is its own tests' only."""
        start = time.monotonic()
        if self.engine is None:
            self.engine = self._new_engine(self.files)
        data: Dict[str, Any] = {}
        if not self.engine.broken:
            data = self.engine.explore(nodeid)
        if self.engine.broken:
            path = nodeid.split("::", 1)[0]
            for other, engine in self.per_file.items():
                if other != path:
                    engine.stop()  # one engine at a time: its workers are a core's worth of processes each
            if path not in self.per_file:
                self.per_file[path] = self._new_engine([path])
            data = self.per_file[path].explore(nodeid)
        if not data.get("error"):
            data["seconds"] = round(time.monotonic() - start, 3)  # what exploring it cost the session
            self._keep(data)
        return data

    def _keep(self, data: Dict[str, Any]) -> None:
        """Appends an exploration's result to <report_dir>/explore/shard-K-of-N.jsonl (emptied when
        the session starts): what a CI job explored, for `affidavit merge` and for a reviewer."""
        path = self._shard_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(data) + "\n")

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        for engine in [self.engine, *self.per_file.values()]:
            if engine is not None:
                with self._guard("pytest_sessionfinish"):
                    engine.stop()
        self.engine = None
        self.per_file.clear()
        if hasattr(self.config, "workerinput") or not self.settings.strict or not self.not_explored:
            return
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return  # an xdist worker: the controller counts what every worker reported
        lines: List[str] = []
        with self._guard("pytest_terminal_summary"):
            lines = _summary(self.explored, self.failed, self.timing, self.not_explored, self.settings,
                             self.closed, self.unconfirmed, self.no_loop)
        lines += [f"affidavit: the plugin failed in {e} (the tests' outcomes stand)" for e in self.errors]
        for line in lines:
            terminalreporter.write_line(line)


def _temp_roots(config: pytest.Config) -> List[str]:
    """The session's base temporary directory, once made (each run of a test has its own)."""
    factory = getattr(config, "_tmp_path_factory", None)
    return [str(p) for p in (getattr(factory, "_basetemp", None), getattr(factory, "_given_basetemp", None)) if p]


def _make_basetemp(config: pytest.Config) -> None:
    """pytest's base temporary directory, made now (as the first tmp_path would): what pytest then
    makes under it for a fixture is the session's own, and its making (the numbered directory, the
    pytest-current link beside it) is no change of the fixture's."""
    factory = getattr(config, "_tmp_path_factory", None)
    try:
        if factory is not None and getattr(factory, "_basetemp", None) is None:
            factory.getbasetemp()
    except OSError:
        pass


def _relative(seen: str, root: str) -> str:
    return seen.replace(root.rstrip(os.sep) + os.sep, "")


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0][:300] if lines else ""


def _unrun_reason(when: str, report: pytest.TestReport) -> str:
    """Why an async test whose plain run did not pass is not explored, in words shared by every
    test it applies to (the summary groups tests by reason): a skip's own reason, pytest-asyncio's
    "not natively supported" for an async test no plugin runs included."""
    if report.skipped and hasattr(report, "wasxfail"):
        return "its plain run was an expected failure (xfail)"
    if report.skipped:
        longrepr = report.longrepr
        why = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        return f"pytest skipped it ({why.removeprefix('Skipped: ') or 'no reason given'})"
    if when == "setup":
        return "its setup failed in its plain run"
    return "it failed in its plain run (--affidavit investigates a failure)"


_ALONE = ("it fails as explored when run alone under plain pytest, on asyncio's own loop: it "
          "passed here only after the tests before it, so it depends on them (a fixture of a wider scope, "
          "what they leave behind), not on a schedule")


def _reason(error: str, nodeid: str) -> str:
    """An engine's message as a reason shared by every test it applies to: without the node id."""
    m = _FOREIGN_LOOP.search(error)
    if m and " in the thread '" in m.group(1):  # one name per thread: the reason groups tests without it
        return "the test's coroutines run on a loop in another thread (a library's or its own), on real time"
    if m:
        # the policy in force is named only when it is not the one this plugin installed
        what = m.group(1).replace(f" under the event loop policy {_OUR_POLICY}", "")
        if what.startswith("asyncio."):  # asyncio's own class, made and run by the test or a library
            return f"the test makes a loop of asyncio's own class {what} itself, not through the event loop " \
                   "policy, whose loops are the ones affidavit controls"
        return f"the test brings its own loop class {what}"
    return error.replace(nodeid, "the test")


def _summary(explored: int, failed: List[str], timing: List[Tuple[str, str]], not_explored: Dict[str, List[str]],
             settings: Settings, closed: int = 0, unconfirmed: Optional[List[Tuple[str, str]]] = None,
             no_loop: int = 0) -> List[str]:
    """The summary lines: totals, then one line per reason a test was not explored (whole, with
    the first such test), then the timing_sensitive results, listed apart."""
    missing = sum(len(v) for v in not_explored.values())
    head = f"affidavit: {explored} test{'s' if explored != 1 else ''} explored"
    notes = []
    if failed:
        notes.append(f"{len(failed)} failed under a controlled schedule")
    if closed:
        notes.append(f"{closed} closed: their zero schedule's run, measured, proved every schedule runs it")
    if notes:
        head += f" ({'; '.join(notes)})"
    head += f", {missing} not explored"
    lines: List[str] = []
    if len(not_explored) == 1:
        (reason, ids), = not_explored.items()
        lines.append(f"{head}: {reason} (first: {ids[0]})")
    else:
        lines.append(head)
        for reason, ids in not_explored.items():
            lines.append(f"affidavit:   {len(ids)} not explored: {reason} (first: {ids[0]})")
    if no_loop:  # sync tests that drove no asyncio loop: nothing of theirs to schedule
        lines.append(f"affidavit: {no_loop} sync test{'s' if no_loop != 1 else ''} ran no event loop: "
                     f"nothing to explore")
    if timing:
        lines.append(f"affidavit: {len(timing)} timing_sensitive (a time threshold of the test crossed by a slow "
                     f"step, not a race; not failed without --affidavit-strict-timing):")
        lines += [f"affidavit:   {nodeid}: {summary}" for nodeid, summary in timing]
    if unconfirmed:
        lines.append(f"affidavit: {len(unconfirmed)} abstained (a schedule failed, but not again every time it was "
                     f"replayed alone, or only with a thread working in real time: not failed):")
        lines += [f"affidavit:   {nodeid}: {why}" for nodeid, why in unconfirmed]
    if settings.strict and missing:
        lines.append(f"affidavit: --affidavit-strict: {missing} test{'s' if missing != 1 else ''} not explored, "
                     f"so the session fails")
    return lines


class InvestigateHooks:
    """--affidavit: every failed test is investigated after the session."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.failed: List[str] = []
        self.pytest_args = [f"--pytest-arg={a}" for a in _worker_args(config)]  # the session's own

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.failed or report.nodeid in self.failed:
            return
        if report.when == "call" or (report.when == "setup" and report.nodeid):
            self.failed.append(report.nodeid)

    def _investigate(self, nodeid: str) -> Finding:
        search = max(5.0, self.settings.budget / 2)
        cmd = [_engine(), "investigate", nodeid, "--fix", "--json", "--seconds", f"{search:g}",
               "--slow-step", f"{self.settings.slow_step:g}", *self.pytest_args]
        try:
            p = subprocess.run(cmd, cwd=str(self.config.rootpath), capture_output=True, text=True,
                               timeout=self.settings.budget, env=_engine_env(self.config, self.settings))
        except subprocess.TimeoutExpired:
            return Finding(nodeid, error=f"over its budget of {self.settings.budget:g} s: not investigated to "
                                         f"the end (--affidavit-budget raises it)")
        except OSError as exc:
            return Finding(nodeid, error=f"the engine could not be started: {exc}")
        if p.stdout.strip().startswith("{"):
            try:
                data = json.loads(p.stdout)
            except ValueError:
                return Finding(nodeid, error=f"the engine printed no result it could read (exit {p.returncode})")
            if isinstance(data, dict):
                return Finding(nodeid, data)
        return Finding(nodeid, error=(p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1])

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return  # an xdist worker: the controller investigates once every worker is done
        tr = terminalreporter
        tr.write_sep("=", "affidavit")
        if not self.failed:
            tr.write_line("no test failed: nothing to investigate")
            return
        for nodeid in self.failed:
            tr.write_line(nodeid)
            try:  # nothing may escape a hook (an INTERNALERROR would hide the other tests' blocks)
                lines = _block(self._investigate(nodeid))
            except (Exception, pytest.fail.Exception, pytest.skip.Exception) as exc:
                lines = [f"not investigated: the plugin failed: {type(exc).__name__}: {_first_line(str(exc))}"]
            for line in lines:
                tr.write_line("  " + line)


def _block(f: Finding) -> List[str]:
    if f.data is None:
        return [f"not investigated: {f.error}"]
    d = f.data
    verdict = VERDICT_WORDS.get(d.get("verdict", ""), d.get("verdict") or "no verdict")
    nat = d.get("natural") or {}
    lines = [f"verdict:  {verdict}", f"rate:     {nat.get('failed', 0)}/{nat.get('runs', 0)} natural runs failed"]
    cause = d.get("cause") or {}
    timing = d.get("timing") or {}
    if cause.get("summary"):
        lines.append(f"cause:    {cause['summary']}")
    elif timing.get("summary"):
        lines.append(f"timing:   {timing['summary']}")
    if d.get("token"):
        lines.append(f"token:    {d['token']}")
    fix = d.get("fix") or {}
    if fix.get("kind"):
        lines.append(f"fix:      {fix['kind']}, {'verified' if fix.get('verified') else 'NOT verified'} "
                     f"(the diff is in the report; nothing was written)")
    elif fix.get("why_none"):
        lines.append(f"fix:      none: {fix['why_none']}")
    if d.get("report"):
        lines.append(f"report:   {d['report']}")
    return lines
