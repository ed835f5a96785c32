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
- ``@pytest.mark.affidavit_replay("afd1:...")`` and ``--affidavit-replay=TOKEN``: run the test
  under that schedule exactly.

Settings come from the command line, then ``-o``/ini options (``affidavit_budget``,
``affidavit_explore``, ``affidavit_strategy``, ``affidavit_slow_step``, ``affidavit_report_dir``),
then ``[tool.affidavit]`` in pyproject.toml (``budget``, ``explore``, ``strategy``, ``slow_step``,
``report_dir``). All the work is the engine's (C); this module only asks it and reports.
"""

from __future__ import annotations

import inspect
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Dict, Generator, List, Optional

import pytest

DEFAULTS: Dict[str, str] = {"budget": "60", "explore": "0", "strategy": "portfolio", "slow_step": "100",
                            "report_dir": ".affidavit"}
INI_HELP = {
    "budget": "seconds per failed test for its investigation (default 60)",
    "explore": "controlled schedules to run each passing async test under (default 0: off)",
    "strategy": "exploration strategy: portfolio, zero, jitter or pct",
    "slow_step": "a step this long (ms) is reported as slow",
    "report_dir": "where incidents and reports go (default .affidavit, beside the store)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("affidavit", "affidavit: make flaky asyncio tests testify")
    group.addoption("--affidavit", action="store_true", default=False,
                    help="investigate every failed test after the session (cause, fix, report)")
    group.addoption("--affidavit-budget", type=float, default=None, metavar="SECONDS",
                    help="seconds per failed test for its investigation (default 60)")
    group.addoption("--affidavit-explore", type=int, default=None, metavar="N",
                    help="also run each passing async test under N controlled schedules")
    group.addoption("--affidavit-shard", default=None, metavar="K/N",
                    help="explore only the K-th of N disjoint shares of the schedules")
    group.addoption("--affidavit-replay", default=None, metavar="TOKEN",
                    help="run the selected async test under this schedule (one test)")
    for name, text in INI_HELP.items():
        parser.addini(f"affidavit_{name}", text, default=None)


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
            explore=int(pick("explore", opt.affidavit_explore)),
            shard=opt.affidavit_shard,
            strategy=pick("strategy", None),
            slow_step=float(pick("slow_step", None)),
            report_dir=pick("report_dir", None),
            replay=opt.affidavit_replay,
        )
    except ValueError as exc:
        raise pytest.UsageError(f"affidavit: a setting is not a number: {exc}") from None
    if s.budget <= 0 or s.explore < 0:
        raise pytest.UsageError("affidavit: the budget must be positive and explore at least 0")
    if s.shard is not None:
        k, _, n = s.shard.partition("/")
        if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
            raise pytest.UsageError(f"affidavit: --affidavit-shard takes K/N with 1 <= K <= N, not {s.shard!r}")
    return s


def _engine() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "affidavit")
    found = beside if os.access(beside, os.X_OK) else shutil.which("affidavit")
    if not found:
        raise pytest.UsageError("affidavit: the affidavit engine is not installed beside this Python")
    return found


def _engine_env(config: pytest.Config, settings: Settings) -> Dict[str, str]:
    """The engine keeps its store and reports in report_dir (relative to the rootdir)."""
    return dict(os.environ, AFFIDAVIT_DIR=os.path.join(str(config.rootpath), settings.report_dir))


def _is_async(item: pytest.Item) -> bool:
    fn = getattr(item, "obj", None)
    return inspect.iscoroutinefunction(fn) or item.get_closest_marker("anyio") is not None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "affidavit_replay(token): run this async test under the affidavit schedule the token names")
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


class ExploreHooks:
    """--affidavit-explore=N: a passing async test that a controlled schedule breaks fails."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        if (call.when != "call" or not report.passed or not _is_async(item)
                or item.get_closest_marker("affidavit_replay") is not None):
            return
        found = self._explore(item.nodeid)
        if found.get("found"):
            cause = self._cause(item.nodeid)
            report.outcome = "failed"
            report.longrepr = (
                f"affidavit: passed on its own, but fails under a controlled schedule "
                f"(run {found.get('failing_run')} of {found.get('runs')}, {found.get('schedule')}):\n"
                f"  {found.get('failure')}\n"
                f"  token:  {found.get('token')}\n"
                f"  replay: affidavit replay {shlex.quote(str(found.get('token')))} {shlex.quote(item.nodeid)}\n"
                f"  cause:  {cause}"
            )
        elif found.get("error"):
            report.sections.append(("affidavit", found["error"]))

    def _cause(self, nodeid: str) -> str:
        """The minimal cause, from an investigation within the budget (its incident is stored)."""
        cmd = [_engine(), "investigate", nodeid, "--json", "--seconds", f"{max(5.0, self.settings.budget / 2):g}"]
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

    def _explore(self, nodeid: str) -> Dict[str, Any]:
        cmd = [_engine(), "explore", nodeid, "--runs", str(self.settings.explore), "--strategy",
               self.settings.strategy, "--json"]
        if self.settings.shard:
            cmd += ["--shard", self.settings.shard]
        try:
            p = subprocess.run(cmd, cwd=str(self.config.rootpath), capture_output=True, text=True,
                               timeout=max(60.0, self.settings.budget * 2), env=_engine_env(self.config, self.settings))
        except subprocess.TimeoutExpired:
            return {"error": f"exploration stopped after {max(60.0, self.settings.budget * 2):.0f} s"}
        if p.returncode not in (0, 1):
            return {"error": (p.stderr.strip().splitlines() or ["exploration failed"])[-1]}
        data: Dict[str, Any] = json.loads(p.stdout)
        self._keep(data)
        return data

    def _keep(self, data: Dict[str, Any]) -> None:
        """Appends an exploration's result to <report_dir>/explore/shard-K-of-N.jsonl: what a CI
        job explored, for `affidavit merge` and for a reviewer."""
        shard = (self.settings.shard or "1/1").replace("/", "-of-")
        folder = os.path.join(str(self.config.rootpath), self.settings.report_dir, "explore")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"shard-{shard}.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(data) + "\n")

class InvestigateHooks:
    """--affidavit: every failed test is investigated after the session."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.failed: List[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.failed or report.nodeid in self.failed:
            return
        if report.when == "call" or (report.when == "setup" and report.nodeid):
            self.failed.append(report.nodeid)

    def _investigate(self, nodeid: str) -> Finding:
        search = max(5.0, self.settings.budget / 2)
        cmd = [_engine(), "investigate", nodeid, "--fix", "--json", "--seconds", f"{search:g}",
               "--slow-step", f"{self.settings.slow_step:g}"]
        try:
            p = subprocess.run(cmd, cwd=str(self.config.rootpath), capture_output=True, text=True,
                               timeout=self.settings.budget, env=_engine_env(self.config, self.settings))
        except subprocess.TimeoutExpired:
            return Finding(nodeid, error=f"over its budget of {self.settings.budget:g} s: not investigated to "
                                         f"the end (--affidavit-budget raises it)")
        if p.stdout.strip().startswith("{"):
            return Finding(nodeid, json.loads(p.stdout))
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
            finding = self._investigate(nodeid)
            for line in _block(finding):
                tr.write_line("  " + line)


def _block(f: Finding) -> List[str]:
    if f.data is None:
        return [f"not investigated: {f.error}"]
    d = f.data
    verdict = {"reproduced": "REPRODUCED", "no_failure": "no failure found", "abstained": "ABSTAINED",
               "deterministic": "fails every time (not a race)"}.get(d.get("verdict", ""), d.get("verdict", "?"))
    nat = d.get("natural") or {}
    lines = [f"verdict:  {verdict}", f"rate:     {nat.get('failed', 0)}/{nat.get('runs', 0)} natural runs failed"]
    cause = d.get("cause") or {}
    if cause.get("summary"):
        lines.append(f"cause:    {cause['summary']}")
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
