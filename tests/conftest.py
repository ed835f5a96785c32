"""pytest's configuration for affidavit's Python tests: the one_thread and plain_build markers,
nothing else.

What the tests share (the repository's path, the engine's, the one way to run it) is in helpers.py,
not here: this file is loaded by every pytest run rooted in the repository, the engine's workers
running tests/cases/ and examples/ included, so it stays empty of anything a worker need not import.
"""

# tests/cases/own_policy/conftest.py sets the event loop policy when imported (the case it holds is
# a project that chose its own loop): `pytest tests` must not recurse into it and change the loop of
# this session. Its test file is run by path, which collect_ignore does not stop.
collect_ignore = ["cases/own_policy", "cases/session_fixtures", "cases/stock_policy"]

import inspect
import os
import traceback
import warnings
from typing import Any

import pytest


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "one_thread: run the test's body in a forked child, whose only thread is the one that "
        "forked (pytest-xdist's worker holds an execnet thread, which the controlled loop rightly treats as a "
        "thread that may wake it)")
    config.addinivalue_line(
        "markers", "plain_build: the test runs the plain (unsanitized) build made for another Python "
        "(build/py3.X-venv), whatever environment runs the suite: make test runs it, make test-asan, which "
        "checks the sanitized build, deselects it (it would run the same plain build a second time)")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: Any) -> Any:
    if pyfuncitem.get_closest_marker("one_thread") is None:
        return None
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        raise TypeError(f"{pyfuncitem.nodeid}: one_thread runs plain functions only")
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "use of fork() may lead to deadlocks"
        pid = os.fork()
    if pid == 0:
        os.close(read)
        status = 0
        try:
            pyfuncitem.obj(**args)
        except BaseException:
            os.write(write, traceback.format_exc().encode())
            status = 1
        os._exit(status)
    os.close(write)
    chunks = []
    while True:
        chunk = os.read(read, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise AssertionError("in the forked child:\n" + b"".join(chunks).decode(errors="replace"))
    return True
