"""python -m affidavit.worker NODEID: the fork server for one pytest test.
python -m affidavit.worker --many N ARG...: the fork server for every test the N pytest arguments
(node ids, files, directories) collect; each run request names its test.

The engine starts one worker per core with the request pipe on stdin and the result pipe on
stdout. The worker runs pytest in-process up to collection, takes over the run loop
(``pytest_runtestloop``), sends HELLO and hands control to the C fork server, which forks one
child per run request. A child installs the controlled loop, seeds ``random`` from the schedule,
runs the item's setup, call and teardown, and records the outcome; the server does the rest.
Everything else about a run (timeouts, crashes, traces, the protocol) is C.
"""

from __future__ import annotations

import ast
import gc
import os
import platform
import random
import re
import shutil
import sys
import tempfile
from typing import Any, List, Optional, Set, Tuple

import pluggy

from . import _runtime, session_fixtures, templates
from .loop import adopt_policy, install

PYTHON = f"{platform.python_implementation()} {platform.python_version()}"
HASH_SEED = os.environ.get("PYTHONHASHSEED", "random")
_HERE = os.path.dirname(os.path.abspath(__file__))
_CHECK_ERROR = "affidavit.check.CheckError: "
_hookimpl = pluggy.HookimplMarker("pytest")  # what pytest.hookimpl is, without importing pytest here
# The directory paths in failure texts and traces are relative to: the one the worker was started
# in, where the engine reads the user's files from. Fixed once, so that a test that changes the
# working directory changes no path.
_BASE = os.getcwd()
# True in a worker once it starts pytest: the affidavit plugin, loaded there like any installed
# plugin (so that its options and ini keys exist for the user's configuration), does nothing.
ACTIVE = False


# Templates (templates.py) unless AFFIDAVIT_NO_TEMPLATES=1: what a benchmark compares against.
_TEMPLATES = os.environ.get("AFFIDAVIT_NO_TEMPLATES", "") != "1"

# The bound of a worker's message to the engine: long enough for any error pytest prints on one
# line (the engine's buffer for it is 8 KiB), so that none is cut in practice.
_WHOLE = 4000


def _shown(path: str) -> str:
    """A path as traces show it: a stdlib or site-packages file relative to its directory
    (asyncio/timeouts.py), any other file relative to _BASE."""
    return _runtime.library_path(os.path.abspath(path)) or os.path.relpath(path, _BASE)


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _collect_error(longrepr: str) -> str:
    """The essential line of a collection failure: the exception and, if given, where."""
    lines = [l for l in longrepr.splitlines() if l.strip()]
    exc = next((l[1:].strip() for l in reversed(lines) if l.startswith("E ") and not l.startswith("E  ")), "")
    if not exc:
        exc = next((l[1:].strip() for l in reversed(lines) if l.startswith("E")), lines[-1] if lines else "")
    where = next((m for m in (re.search(r'File "([^"]+)", line (\d+)', l) for l in lines) if m), None)
    if where and where.group(1) not in exc:
        exc += f" ({_shown(where.group(1))}, line {where.group(2)})"
    return _one_line(exc, _WHOLE)


def _summarize(reports: List[Any]) -> Tuple[int, str]:
    """Maps pytest's setup/call/teardown reports to an outcome and a failure text."""
    for rep in reports:
        if rep.failed:
            outcome = _runtime.OUT_FAIL if rep.when == "call" else _runtime.OUT_ERROR
            crash = getattr(rep.longrepr, "reprcrash", None)
            if crash is not None:
                where = f"{_shown(crash.path)}:{crash.lineno}"
                if os.path.dirname(os.path.abspath(crash.path)) == _HERE:
                    where = "affidavit check"  # the harness's own oracle: its line says nothing
                first = crash.message.strip().splitlines()[0] if crash.message.strip() else ""
                text = f"{where}: {first}"
            else:
                text = str(rep.longrepr)
            if rep.when != "call":
                text = f"{rep.when} failed: {text}"
            return outcome, text[:8000]
    if any(rep.skipped for rep in reports):
        return _runtime.OUT_SKIP, "skipped"
    return _runtime.OUT_PASS, ""


def _escaped(exc: BaseException, path: str) -> str:
    """'file:line: Name: message' for an exception that escaped pytest's run protocol, at the
    deepest frame of the test's own file."""
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    where = f"{_shown(frames[-1].filename)}:{frames[-1].lineno}: " if frames else ""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{where}{type(exc).__name__}{': ' + msg if msg else ''} (raised inside the test)"


def _run_protocol(item: Any, reraise: Any, setup_only: bool, log: bool) -> List[Any]:
    """pytest's run protocol for one item (``_pytest.runner.runtestprotocol``): setup, then call
    if setup passed, then teardown, each phase reported through ``pytest_runtest_makereport`` and
    ``pytest_runtest_logreport`` exactly as pytest reports it.

    Every phase gets its report, a passing one too: fixtures read what makereport leaves behind
    (tmp_path's teardown reads the phase reports pytest stashes on the item), conftest hook
    wrappers set ``item.rep_call``, and a plugin's makereport may turn a passing call into a
    failure or an xfail. Logreport is called when a plugin other than pytest's own implements it
    (``log``, see _logs_reports): a conftest or a third-party plugin may act there. pytest's own
    only report what happened (the terminal, which writes to /dev/null here; junitxml and stepwise,
    which write at the end of the session, which a run never reaches; the session's maxfail
    count), and a report costs page faults in a freshly forked child, so they are not called for
    nothing. ``pytest_exception_interact`` is not called: it exists to enter a debugger, and a
    run has no terminal to debug in. The item's request is not reset after teardown: the child
    exits right after. ``reraise`` is _reraise_exceptions(config), computed once in the worker.
    """
    from _pytest.runner import CallInfo

    if hasattr(item, "_request") and not item._request:
        item._initrequest()
    ihook = item.ihook
    reports: List[Any] = []

    def phase(when: str, fn: Any) -> Any:
        call = CallInfo.from_call(fn, when=when, reraise=reraise)
        rep = ihook.pytest_runtest_makereport(item=item, call=call)
        if log:
            ihook.pytest_runtest_logreport(report=rep)
        reports.append(rep)
        return rep

    if phase("setup", lambda: ihook.pytest_runtest_setup(item=item)).passed and not setup_only:
        phase("call", lambda: ihook.pytest_runtest_call(item=item))
    phase("teardown", lambda: ihook.pytest_runtest_teardown(item=item, nextitem=None))
    return reports


def _reraise_exceptions(config: Any) -> Tuple[type, ...]:
    """What pytest's run protocol lets through a phase instead of reporting it: pytest 9 names it
    ``_pytest.runner.get_reraise_exceptions``; pytest 7.4 to 8.4 compute it inline in
    ``call_and_report``, the same way (pytest.exit always, KeyboardInterrupt unless --pdb)."""
    try:
        from _pytest.runner import get_reraise_exceptions
    except ImportError:
        from _pytest.outcomes import Exit

        return (Exit,) if config.getoption("usepdb", False) else (Exit, KeyboardInterrupt)
    return tuple(get_reraise_exceptions(config))


def _logs_reports(item: Any) -> bool:
    """Whether a plugin that is not part of pytest (a conftest, a third-party plugin) implements
    pytest_runtest_logreport for the item."""
    for impl in item.ihook.pytest_runtest_logreport.get_hookimpls():
        plugin = impl.plugin
        module = plugin.__name__ if isinstance(plugin, type(os)) else type(plugin).__module__
        if not (module == "_pytest" or module.startswith("_pytest.")):
            return True
    return False


def _fd_captures(config: Any) -> List[Any]:
    """pytest's global captures of file descriptors 1 and 2: none under ``-s`` or
    ``--capture=sys``. Each holds the capture file (``tmpfile``) and a duplicate of the descriptor
    it replaced (``targetfd_save``), restored between phases."""
    capman = config.pluginmanager.getplugin("capturemanager")
    multi = getattr(capman, "_global_capturing", None)
    found = []
    for cap in (getattr(multi, "out", None), getattr(multi, "err", None)):
        if isinstance(getattr(cap, "targetfd_save", None), int) and hasattr(cap, "tmpfile"):
            found.append(cap)
    return found


def _loop_note(item: Any) -> str:
    """Where the item's event_loop_policy fixture comes from, when a conftest or module overrides
    pytest-asyncio's: the policy it returns makes the test's loops, and they are not affidavit's."""
    info = getattr(item, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", {}).get("event_loop_policy") or ()
    func = getattr(defs[-1], "func", None) if defs else None
    if func is None or getattr(func, "__module__", "").startswith("pytest_asyncio"):
        return ""
    code = getattr(func, "__code__", None)
    where = f" at {_shown(code.co_filename)}:{code.co_firstlineno}" if code else ""
    return f"the event_loop_policy fixture is overridden{where}"


def _warm_up() -> None:
    """Runs empty event loops in the worker before it forks, so that every child starts with
    asyncio's loop machinery already executed (imported, specialized, cached) instead of paying
    for it, page fault by page fault, in each run. Twelve, not three: CPython 3.11 quickens a
    function's code on its eighth call, and a child that does it writes the code object (35 fewer
    page faults a run, bench/forkcost.py). No user code runs here."""
    import asyncio

    async def nothing() -> None:
        await asyncio.sleep(0)
        await asyncio.ensure_future(asyncio.sleep(0))

    for _ in range(12):
        asyncio.run(nothing())
    asyncio.set_event_loop(None)
    # asyncio.run leaves the policy told that the program chose to have no current loop, so that
    # asyncio.get_event_loop() would raise in every run instead of making the loop, as it does in a
    # fresh process: a test that drives `asyncio.get_event_loop().run_until_complete(...)`. Its
    # per-thread state goes back to a fresh policy's (the project's own policy's too).
    local = getattr(asyncio.get_event_loop_policy(), "_local", None)
    if local is not None and hasattr(local, "_set_called"):
        local._set_called = False


def _warm_reports(item: Any, reraise: Any) -> None:
    """Builds, in the worker, the reports of a plain passing run a dozen times and drops them, so
    that pytest's report code is already executed and specialized when a child first runs it
    (the same reason as _warm_up). Only pytest's own code runs: the reports are made directly,
    not through the makereport hook, and only for pytest's Function items, whose location and
    keywords pytest computes. What is kept is the item's location, which pytest caches on first
    use and computes from the rootdir alone, so a child would compute the same."""
    from _pytest.python import Function
    from _pytest.reports import TestReport
    from _pytest.runner import CallInfo

    if not isinstance(item, Function):
        return
    for _ in range(12):
        for when in ("setup", "call", "teardown"):
            TestReport.from_item_and_call(item, CallInfo.from_call(lambda: None, when=when, reraise=reraise))


def _regex_keys() -> Set[Any]:
    """The keys of the re module's pattern caches: (type, pattern, flags)."""
    keys: Set[Any] = set()
    for name in ("_cache", "_cache2"):  # 3.12 added the second
        cache = getattr(re, name, None)
        if isinstance(cache, dict):
            keys.update(cache)
    return keys


def _learn_regexes(fd: int, known: Set[Any]) -> None:
    """In a worker's first run, after the test: writes to fd the regular expressions the run
    compiled that the worker had not (a plugin's warning filter, a mark's, the test's own). A run
    recompiles them every time otherwise: each child starts from the worker's cache."""
    new = []
    for key in _regex_keys() - known:
        if isinstance(key, tuple) and len(key) == 3 and isinstance(key[1], (str, bytes)) and isinstance(key[2], int):
            if len(key[1]) <= 10_000 and not key[2] & re.DEBUG:
                new.append((key[1], int(key[2])))
    os.pwrite(fd, repr(new[:64]).encode(), 0)


def _warm_regexes(fd: int) -> int:
    """In the worker, between its first run and the next: compiles what _learn_regexes found, so
    the children find it in the cache they inherit. A cache is all this changes."""
    data = os.pread(fd, 1 << 20, 0)
    compiled = 0
    for pattern, flags in ast.literal_eval(data.decode()) if data else []:
        try:
            re.compile(pattern, flags)
            compiled += 1
        except (re.error, ValueError, TypeError):  # compiled once, so it should not fail: skip it
            pass
    return compiled


def _controlled_factory(factory: Any) -> Any:
    """A loop factory that makes the controlled loop where the given one makes asyncio's stock
    loop: asyncio.new_event_loop asks the event loop policy, which install() set. Any other
    factory is the test's own loop, left alone: the runtime names it when it runs."""
    import asyncio

    stock = {asyncio.new_event_loop, asyncio.SelectorEventLoop, getattr(asyncio, "EventLoop", None),
             getattr(asyncio.DefaultEventLoopPolicy, "_loop_factory", None)}
    return asyncio.new_event_loop if factory in stock else factory


def _control_loop_factory(item: Any) -> None:
    """pytest-asyncio's loop factories (a conftest's ``pytest_asyncio_loop_factories``) reach the
    test as the parameter of its ``_asyncio_loop_factory`` fixture, and pytest-asyncio creates the
    test's loop by calling it, not through the event loop policy: the item's parameter is
    replaced by _controlled_factory's (its id, and so the node id, stay the same)."""
    params = getattr(getattr(item, "callspec", None), "params", None)
    if isinstance(params, dict) and params.get("_asyncio_loop_factory") is not None:
        params["_asyncio_loop_factory"] = _controlled_factory(params["_asyncio_loop_factory"])


class _StockPolicy:
    """Registered when the item's event_loop_policy fixture is overridden (_loop_note): a fixture
    that returns asyncio's own default policy gets the controlled one in its place, which makes
    the same loops on affidavit's clock; a subclass that makes asyncio's own loops is adopted
    (loop.adopt). Any other policy is the test's own, left alone."""

    @_hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: Any) -> Any:
        result = yield
        import asyncio

        from .loop import ControlledPolicy, adopt

        if fixturedef.argname == "event_loop_policy" and type(result) is not asyncio.DefaultEventLoopPolicy:
            adopt(result)  # a subclass making asyncio's own loops makes the controlled one (loop.adopt)
        elif fixturedef.argname == "event_loop_policy":
            result = ControlledPolicy()
            cached = fixturedef.cached_result  # what later requests of the fixture get
            if isinstance(cached, tuple) and len(cached) == 3 and cached[2] is None:
                fixturedef.cached_result = (result, cached[1], None)
        return result


# The options that write or erase a session's own output, by their dest, and the value that turns
# each off: junitxml, pytest-html, pytest-reportlog, the old resultlog, pytest-json-report,
# pytest-cov (which erases the coverage data where the session keeps its own), and --basetemp
# (which pytest empties on first use, under the session's feet). A worker clears them after
# parsing, whatever gave them: the command line, the ini's addopts, PYTEST_ADDOPTS. Its runs are
# not the session's tests; what they would write is not the session's output.
_SESSION_OUTPUT = {"xmlpath": None, "htmlpath": None, "report_log": None, "resultlog": None,
                   "json_report": False, "json_report_file": None, "cov_source": None, "basetemp": None}


def _drop_session_output(options: Any) -> None:
    for dest, off in _SESSION_OUTPUT.items():
        if getattr(options, dest, None):
            setattr(options, dest, off)
    if hasattr(options, "no_cov"):
        options.no_cov = True


# The fixtures through which pytest makes its base temporary directory.
_TMP_FIXTURES = frozenset({"tmp_path", "tmpdir", "tmp_path_factory", "tmpdir_factory"})


class _Server:
    """A pytest plugin that turns the session into a fork server for one item, or for every
    collected item (many)."""

    def __init__(self, nodeid: str, req_fd: int, res_fd: int, many: bool = False) -> None:
        self.nodeid = nodeid
        self.many = many
        self.req_fd = req_fd
        self.res_fd = res_fd
        self.error = ""
        self.served = False
        self.reports: Optional[List[Any]] = None  # the run's reports, set by pytest_runtest_protocol
        self.reraise: Any = ()  # what pytest's protocol lets through, set before the first fork
        self.setup_only = False  # --setup-only: pytest runs no call phase
        self.log_reports = True  # whether to call pytest_runtest_logreport (_logs_reports)
        self.lesson: Optional[Any] = None  # the file the first run writes what it learned to

    # Hook wrappers: they run before every plugin's own implementation. pytest-cov starts coverage
    # in its pytest_load_initial_conftests; junitxml, pytest-html and the others act in
    # pytest_configure, which pytest's own pytest_cmdline_main calls.
    @_hookimpl(hookwrapper=True)
    def pytest_load_initial_conftests(self, early_config: Any) -> Any:
        _drop_session_output(early_config.known_args_namespace)
        yield

    @_hookimpl(hookwrapper=True)
    def pytest_cmdline_main(self, config: Any) -> Any:
        _drop_session_output(config.option)
        yield

    @_hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> bool:
        """The innermost run protocol, in place of pytest's own (runner.py), so that the hook
        wrappers around it apply to every run as they do under pytest: the warnings plugin's
        filters (a ``filterwarnings("error")`` mark makes a warning fail the test), the assertion
        plugin's comparison hooks, faulthandler's timeout, and any plugin's wrapper."""
        self.reports = _run_protocol(item, self.reraise, self.setup_only, self.log_reports)
        return True

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed and not self.error:
            error = _collect_error(report.longreprtext)
            if error.startswith(_CHECK_ERROR):  # affidavit check's own target validation
                self.error = error[len(_CHECK_ERROR) :].split(" (.affidavit", 1)[0]
                return
            self.error = f"cannot collect {report.nodeid or self.nodeid}: " + error

    def pytest_runtestloop(self, session: Any) -> bool:
        items = session.items
        if self.error:
            return True
        if len(items) != 1 and not (self.many and items):
            if not items:
                self.error = f"no test matches {self.nodeid}"
            else:
                self.error = (
                    f"{self.nodeid} selects {len(items)} tests; give the node id of one test, "
                    f"e.g. {items[0].nodeid}"
                )
            return True
        # Each collected item by its node id: a node id collected twice (a file given twice)
        # is served once, as pytest runs it once per collection.
        by_id = {}
        for it in items:
            by_id.setdefault(it.nodeid, it)
        item = items[0]
        import pytest

        self.reraise = _reraise_exceptions(session.config)
        self.setup_only = bool(session.config.getoption("setuponly", False))
        logs = {nodeid: _logs_reports(it) for nodeid, it in by_id.items()}
        # a policy the project set at import (a conftest's uvloop policy) makes every test's loop;
        # one that makes asyncio's own loops is adopted (loop.adopt_policy)
        policy = adopt_policy()
        policy_note = f"the project sets the event loop policy {policy}" if policy else ""
        notes = {nodeid: (_loop_note(it) or policy_note).encode()[:1000].decode("utf-8", "ignore")
                 for nodeid, it in by_id.items()}
        for it in by_id.values():
            _control_loop_factory(it)

        # one base temporary directory for every run, as one pytest session has: made now, before
        # the first fork, so that each run's tmp_path is an exclusive numbered directory in it, and
        # named to the runtime as private to each run (sharing.c: copies of a test that keep to
        # such places may run side by side). Only when a collected test asks for one, as pytest
        # makes it only then (a run that makes its own is then writing outside private places).
        factory = getattr(session.config, "_tmp_path_factory", None)
        if factory is not None and any(_TMP_FIXTURES & set(getattr(it, "fixturenames", ()))
                                       for it in by_id.values()):
            try:
                _runtime.private_root(str(factory.getbasetemp()))
            except Exception:  # a project without a usable temporary directory: nothing is private
                pass
        # the collected tests' directories are the user's code even under a library directory
        # (CPython's own test.test_asyncio, a package's tests run from site-packages)
        _runtime.user_roots(sorted({str(it.path.parent) for it in by_id.values() if getattr(it, "path", None)}))
        self.lesson = tempfile.TemporaryFile()
        known = _regex_keys()

        # pytest captures at the file descriptor level unless told otherwise (-s, --capture=...),
        # as it does under pytest. Between phases it puts back the descriptors it saved when the
        # session began, which were the collection log: they go to /dev/null like fds 1 and 2.
        captures = _fd_captures(session.config)

        def run_child(mode: int, token: str, nodeid: str) -> None:
            # Every child of this worker writes into the same capture files (one open file, one
            # offset): a child killed mid-run leaves its output there, and it is not this run's.
            for cap in captures:
                cap.tmpfile.seek(0)
                cap.tmpfile.truncate()
            item = by_id.get(nodeid) if nodeid else items[0]
            if item is None:  # the engine only names collected tests (pool.c)
                _runtime.result(_runtime.OUT_ERROR, f"affidavit: {nodeid} was not collected by this worker")
                return
            self.log_reports = logs[item.nodeid]
            if self.many:  # this test's note, or none: not the first collected test's
                _runtime.set_context(_BASE, notes[item.nodeid])
            seeded = None
            if mode == _runtime.MODE_CONTROLLED:
                random.seed(_runtime.random_seed())
                # what the schedule put into `random`: a run that leaves it changed drew from it
                # (or reseeded it), and its schedules differ by more than timing (closure.h)
                seeded = random.getstate()
            try:
                item.ihook.pytest_runtest_protocol(item=item, nextitem=None)
                if self.reports is None:
                    impls = [i.plugin_name for i in item.ihook.pytest_runtest_protocol.get_hookimpls()
                             if not (i.hookwrapper or i.wrapper) and i.plugin is not self]
                    outcome, text = _runtime.OUT_ERROR, (
                        "affidavit: another plugin runs the test in place of pytest's run protocol "
                        f"({', '.join(impls) or '?'}); disable it with -p no:NAME")
                else:
                    outcome, text = _summarize(self.reports)
            except (KeyboardInterrupt, pytest.exit.Exception) as exc:
                # pytest lets these through its run protocol (they end a session); raised by the
                # test, they are the test's failure, not the worker's.
                outcome, text = _runtime.OUT_FAIL, _escaped(exc, str(item.path))
            if self.lesson is not None:
                try:
                    _learn_regexes(self.lesson.fileno(), known)
                except Exception:  # only ever a missed speed-up
                    pass
            _runtime.result(outcome, text, seeded is not None and random.getstate() != seeded)

        devnull = os.open(os.devnull, os.O_WRONLY)
        for fd in [1, 2] + [cap.targetfd_save for cap in captures]:
            os.dup2(devnull, fd)
        os.close(devnull)
        # the runtime keeps at most 1 KiB of a note: cut at a character boundary above
        note = notes[item.nodeid]
        if any(notes.values()):
            session.config.pluginmanager.register(_StockPolicy(), "affidavit-stock-policy")
        _runtime.set_context(_BASE, note)
        # the session fixtures the tests ask for, made once here as pytest makes them once per
        # session (those a fork copies faithfully: session_fixtures.py); each run starts with them
        session_fixtures.make(session, list(by_id.values()))
        # Children share the parent's pages until they write: a frozen heap is not walked (and so
        # not dirtied) by the collector in every child.
        install()
        _warm_up()
        _warm_reports(item, self.reraise)
        gc.collect()
        gc.freeze()
        _runtime.trim_heap()
        self.served = True
        _runtime.send_hello(self.res_fd, PYTHON, HASH_SEED, "", "\n".join(by_id) if self.many else item.nodeid)
        # The first run teaches the worker what every run would otherwise redo (_learn_regexes);
        # the rest start from what it learned.
        def make_template(nodeid: str) -> bool:  # in a template process of the test (templates.py)
            it = by_id.get(nodeid) if nodeid else item
            return it is not None and templates.make(session, it)

        prepare = make_template if _TEMPLATES else None
        if _runtime.serve(self.req_fd, self.res_fd, run_child, PYTHON, HASH_SEED, 1, prepare) == 1:
            try:
                _warm_regexes(self.lesson.fileno())
            except Exception:
                pass
            self.lesson.close()
            self.lesson = None
            gc.collect()
            gc.freeze()
            _runtime.serve(self.req_fd, self.res_fd, run_child, PYTHON, HASH_SEED, 0, prepare)
        # Serving is over: the engine closed the pipe and may stop this process at any moment. The
        # session's end is not this process's to run: pytest's cache plugin would write its files
        # (into cache_dir, which a stop mid-write leaves behind), a coverage plugin its data, a
        # conftest's pytest_sessionfinish its effects once per worker, none of which a pytest
        # session of the user's does. The runs are done; the worker leaves now.
        sys.stdout.flush()
        os._exit(0)


def _error_from_log(path_fd: int) -> Optional[str]:
    """pytest's message when it stopped before collecting: from its "ERROR:" line to the next
    blank line, whole (a usage error's real reason, "unrecognized arguments: ...", is on the line
    after the usage synopsis), or the last line it wrote."""
    os.lseek(path_fd, 0, os.SEEK_SET)
    data = b""
    while True:
        chunk = os.read(path_fd, 65536)
        if not chunk:
            break
        data += chunk
    lines = data.decode("utf-8", "replace").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("ERROR: "):
            block = [line[len("ERROR: ") :]]
            for more in lines[i + 1 :]:
                if not more.strip():
                    break
                block.append(more.strip())
            if block[0].startswith("usage: ") and len(block) > 1:
                block = block[1:]  # the synopsis says nothing the reason does not
            return _one_line("; ".join(block), _WHOLE)
    lines = [l for l in lines if l.strip()]
    conftest = next((l.strip() for l in lines if "while loading conftest" in l), "")
    if conftest and lines and lines[-1].strip() != conftest:  # which conftest, then what it raised
        return _one_line(f"{conftest.rstrip('.')}: {lines[-1].strip().lstrip('E').strip()}", _WHOLE)
    return _one_line(lines[-1], _WHOLE) if lines else None


def _is_usage_error(code: int, error: str, log_fd: int) -> bool:
    """Whether a worker that cannot serve its test fails on what the user asked (the node id
    matches nothing or several tests, or pytest refuses the arguments): exit code 2 of the engine.
    A conftest that fails to load and pytest crashing are not usage errors, although pytest
    reports the first with its usage-error code."""
    if error.startswith(("no test matches ", "cannot collect ")) or " selects " in error:
        return not error.startswith("cannot collect ") or "conftest" not in error
    if int(code) != 4:  # pytest's ExitCode.USAGE_ERROR
        return False
    os.lseek(log_fd, 0, os.SEEK_SET)
    return b"while loading conftest" not in os.read(log_fd, 1 << 20)


def _arguments(argv: List[str]) -> Optional[Tuple[List[str], List[str], bool]]:
    """NODEID ARGS... or --many N ARG1..ARGN ARGS...: what to collect, pytest's other arguments,
    and whether the worker serves several tests; None for a command line that is neither."""
    if argv[:1] == ["--many"]:
        if len(argv) < 2 or not argv[1].isdigit() or not 0 < int(argv[1]) <= len(argv) - 2:
            return None
        n = int(argv[1])
        return argv[2 : 2 + n], argv[2 + n :], True
    return (argv[:1], argv[1:], False) if argv else None


def _blocks_cache(args: List[str]) -> bool:
    """Whether args block pytest's cache plugin (-p no:cacheprovider, -pno:cacheprovider), as
    pytest reads -p options before it loads its own plugins."""
    names = [b for a, b in zip(args, args[1:]) if a == "-p"]
    names += [a[2:] for a in args if a.startswith("-p") and len(a) > 2]
    return any(n.strip() in ("no:cacheprovider", "no:_pytest.cacheprovider") for n in names)


def main(argv: List[str]) -> int:
    parsed = _arguments(argv)
    if parsed is None:
        print("usage: python -m affidavit.worker NODEID [PYTEST-ARGS...]\n"
              "       python -m affidavit.worker --many N ARG1..ARGN [PYTEST-ARGS...]", file=sys.stderr)
        return 2
    collect, extra, many = parsed
    nodeid = " ".join(collect)
    os.environ.pop("AFFIDAVIT_WORKER_HEAP", None)  # read by _runtime's init; not for the test's processes
    req_fd = os.dup(0)
    res_fd = os.dup(1)
    # pytest's own output during collection goes to a scratch file: on failure its "ERROR:" line
    # becomes the one-line message; on success the file is dropped.
    log = tempfile.TemporaryFile()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    import pytest

    # Before the test module is imported: `from time import sleep` there must get the recorded one.
    _runtime.install_hooks()
    server = _Server(nodeid, req_fd, res_fd, many)
    global ACTIVE
    ACTIVE = True  # the affidavit pytest plugin stays inert in this process (pytest_plugin._in_worker)
    # run as `python -m affidavit.worker`, this module is __main__: under its own name too, so that
    # the plugin (and a conftest) see it there
    sys.modules.setdefault("affidavit.worker", sys.modules[__name__])
    # The user's arguments (extra) come from the engine's --pytest-arg. The cache plugin stays
    # loaded, so that options it adds (--cache-clear in addopts, --lf) mean what they mean under
    # pytest, but writes to a directory of its own: a worker never changes the project's
    # .pytest_cache. Given last, that cache_dir wins over the user's. The directory is named, not
    # made: a worker that serves runs is stopped by the engine's SIGTERM before pytest's session
    # ends, so nothing writes the cache and nothing is left behind; one that does not serve ends
    # its session, whose cache writes are removed below.
    # With the cache plugin blocked on the command line (-p no:cacheprovider: pytest blocks it
    # before it loads, so cache_dir is no known option), nothing writes a cache, and -o cache_dir
    # would be an unknown option: a warning, an error under filterwarnings = error.
    cache_dir = tempfile.mkdtemp(prefix="affidavit-cache-")
    os.rmdir(cache_dir)
    own_cache = [] if _blocks_cache(extra) else ["-o", f"cache_dir={cache_dir}"]
    args = [*collect, "-q", "--no-header", *extra, *own_cache]
    try:
        code = pytest.main(args, plugins=[server])
    except BaseException as exc:  # a crashing plugin or conftest must still produce one message
        server.error = server.error or f"pytest failed: {_one_line(repr(exc), _WHOLE)}"
        code = 3
    shutil.rmtree(cache_dir, ignore_errors=True)
    status = 0
    if not server.served:
        sys.stdout.flush()
        sys.stderr.flush()
        error = server.error or _error_from_log(log.fileno()) or f"pytest exited with code {int(code)}"
        _runtime.send_hello(res_fd, PYTHON, HASH_SEED, error, nodeid)
        # the engine reads the kind of failure from the exit code (pool.c, AFD_WORKER_EXIT_USAGE)
        status = 2 if _is_usage_error(int(code), error, log.fileno()) else 3
    sys.stdout.flush()
    os._exit(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
