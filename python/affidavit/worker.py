"""python -m affidavit.worker NODEID: the fork server for one pytest test.

The engine starts one worker per core with the request pipe on stdin and the result pipe on
stdout. The worker runs pytest in-process up to collection, takes over the run loop
(``pytest_runtestloop``), sends HELLO and hands control to the C fork server, which forks one
child per run request. A child installs the controlled loop, seeds ``random`` from the schedule,
runs the item's setup, call and teardown, and records the outcome; the server does the rest.
Everything else about a run (timeouts, crashes, traces, the protocol) is C.
"""

from __future__ import annotations

import gc
import os
import platform
import random
import re
import sys
import tempfile
from typing import Any, List, Optional, Tuple

from . import _runtime
from .loop import install

PYTHON = f"{platform.python_implementation()} {platform.python_version()}"
HASH_SEED = os.environ.get("PYTHONHASHSEED", "random")


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
        exc += f" ({os.path.relpath(where.group(1))}, line {where.group(2)})"
    return _one_line(exc)


def _summarize(reports: List[Any]) -> Tuple[int, str]:
    """Maps pytest's setup/call/teardown reports to an outcome and a failure text."""
    for rep in reports:
        if rep.failed:
            outcome = _runtime.OUT_FAIL if rep.when == "call" else _runtime.OUT_ERROR
            crash = getattr(rep.longrepr, "reprcrash", None)
            if crash is not None:
                where = f"{os.path.relpath(crash.path)}:{crash.lineno}"
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


class _Server:
    """A pytest plugin that turns the session into a fork server for one item."""

    def __init__(self, nodeid: str, req_fd: int, res_fd: int) -> None:
        self.nodeid = nodeid
        self.req_fd = req_fd
        self.res_fd = res_fd
        self.error = ""
        self.served = False

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed and not self.error:
            self.error = f"cannot collect {report.nodeid or self.nodeid}: " + _collect_error(
                report.longreprtext
            )

    def pytest_runtestloop(self, session: Any) -> bool:
        items = session.items
        if self.error:
            return True
        if len(items) != 1:
            if not items:
                self.error = f"no test matches {self.nodeid}"
            else:
                self.error = (
                    f"{self.nodeid} selects {len(items)} tests; give the node id of one test, "
                    f"e.g. {items[0].nodeid}"
                )
            return True
        item = items[0]
        from _pytest.runner import runtestprotocol

        def run_child(mode: int, token: str) -> None:
            if mode == _runtime.MODE_CONTROLLED:
                random.seed(_runtime.random_seed())
            install()
            reports = runtestprotocol(item, log=False, nextitem=None)
            outcome, text = _summarize(reports)
            _runtime.result(outcome, text)

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
        # Children share the parent's pages until they write: a frozen heap is not walked (and so
        # not dirtied) by the collector in every child.
        gc.collect()
        gc.freeze()
        self.served = True
        _runtime.send_hello(self.res_fd, PYTHON, HASH_SEED, "", item.nodeid)
        _runtime.serve(self.req_fd, self.res_fd, run_child, PYTHON, HASH_SEED)
        return True


def _error_from_log(path_fd: int) -> Optional[str]:
    os.lseek(path_fd, 0, os.SEEK_SET)
    data = b""
    while True:
        chunk = os.read(path_fd, 65536)
        if not chunk:
            break
        data += chunk
    text = data.decode("utf-8", "replace")
    for line in text.splitlines():
        if line.startswith("ERROR: "):
            return _one_line(line[len("ERROR: ") :])
    lines = [l for l in text.splitlines() if l.strip()]
    return _one_line(lines[-1]) if lines else None


def main(argv: List[str]) -> int:
    if not argv:
        print("usage: python -m affidavit.worker NODEID [PYTEST-ARGS...]", file=sys.stderr)
        return 2
    nodeid, extra = argv[0], argv[1:]
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

    server = _Server(nodeid, req_fd, res_fd)
    args = [nodeid, "-p", "no:cacheprovider", "--capture=sys", "-q", "--no-header", *extra]
    try:
        code = pytest.main(args, plugins=[server])
    except BaseException as exc:  # a crashing plugin or conftest must still produce one message
        server.error = server.error or f"pytest failed: {_one_line(repr(exc))}"
        code = 3
    if not server.served:
        sys.stdout.flush()
        sys.stderr.flush()
        error = server.error or _error_from_log(log.fileno()) or f"pytest exited with code {int(code)}"
        _runtime.send_hello(res_fd, PYTHON, HASH_SEED, error, nodeid)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
