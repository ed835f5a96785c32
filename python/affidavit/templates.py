"""A test's plain fixtures made once, in a template process its runs fork from (forkserver.c).

A run sets up every fixture of its test itself, as one pytest run does; a fixture that builds
mocks with ``create_autospec`` or an application object costs tens of milliseconds, which pytest
pays once and thirty runs pay thirty times. So the worker forks a template for each test, which
makes the first fixtures of the test's setup, in pytest's own order, and the test's runs fork
from it: each starts with them made (a copy of them: what one run changes, no other sees), sets up
the rest itself, and tears all of them down at its end, as pytest does, in pytest's order.

Made in advance: the longest prefix of the test's fixture names whose fixtures are synchronous
functions, whose own fixtures are too, and which are not pytest's per-test capture and temporary
directory fixtures. A coroutine fixture stops the prefix: it needs the run's loop. Then what
making them did is checked, and the template declines (every run makes them itself, as before)
when they started a thread, left a file descriptor open (a loop, a socket, a file: copies would
share it), changed or made anything on the file system (pytest's temporary directories included:
a directory copies would share), drew from ``random`` (each run seeds it from its schedule), read
the real clock (a run starting later would see the wait as elapsed), raised, or warned. Not seen:
a fixture that reads ``datetime.now()`` or a clock from C sees its run start up to the length of
the test's exploration later, as on a machine that paused between its setup and its call.
"""

from __future__ import annotations

import random
import threading
import warnings
from typing import Any, Callable, Dict, List

from . import _runtime, session_fixtures

# pytest's fixtures whose state is per test outside the fixture's value: output capture, log and
# warning capture, temporary directories, pytester.
_PER_TEST = frozenset({"tmp_path", "tmpdir", "capsys", "capfd", "capsysbinary", "capfdbinary", "capteesys",
                       "caplog", "recwarn", "pytester", "testdir"})


def _accept(name: str, fd: Any) -> bool:
    return name not in _PER_TEST and session_fixtures.plain_function(fd.func)


def prefix(item: Any) -> List[str]:
    """The fixture names, in the order pytest sets them up, that a template makes."""
    memo: Dict[str, bool] = {}
    out: List[str] = []
    for name in getattr(item, "fixturenames", ()):
        if not session_fixtures.qualifies(name, item, memo, _accept):
            break
        if name != "request":
            out.append(name)
    return out


def _unmade(item: Any, name: str) -> bool:
    defs = item._fixtureinfo.name2fixturedefs.get(name)
    return bool(defs) and defs[-1].cached_result is None


def _nothing() -> None:
    pass


def make(session: Any, item: Any) -> bool:
    """Makes item's prefix fixtures in this process (the template); True when they are made and
    every run forked from here will set up the rest and tear all down, False when it declined
    (nothing to make, or making them did what a copy must not share)."""
    names = prefix(item)
    if not any(_unmade(item, n) for n in names):
        return False  # only session fixtures the worker made already: nothing to save
    state = session._setupstate
    threads = set(threading.enumerate())
    fds = session_fixtures.open_fds()
    drawn = random.getstate()
    reads = _runtime.clock_reads()
    outer = session_fixtures.watch_begin(lambda: [])  # nothing private: a copy shares any path
    ok = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            item.setup = _nothing  # the collectors and the item on the stack, none of its fixtures
            try:
                state.setup(item)
            finally:
                del item.setup
            for name in names:
                item._request.getfixturevalue(name)
        except BaseException:  # the runs make them themselves and fail as pytest would
            ok = False
    temp_left = session_fixtures.made_temp()
    seen = session_fixtures.watch_end(outer)
    ok = (ok and not seen and not temp_left and not caught and random.getstate() == drawn
          and _runtime.clock_reads() == reads and session_fixtures.open_fds() == fds
          and not [t for t in threading.enumerate() if t not in threads and t.is_alive()])
    if not ok:  # undone as a run's teardown would; this process ends, the worker runs the test as before
        try:
            state.teardown_exact(None)
        except BaseException:
            pass
        return False
    # Each run pushes the item again (pytest's setup of it fills the rest of its fixtures) with the
    # finalizers made here under those it makes itself: torn down in pytest's order.
    finalizers, _ = state.stack.pop(item)
    kept = list(finalizers[1:])  # the first is the item's own teardown, which its push adds again
    real: Callable[[], None] = item.setup

    def setup() -> None:
        state.stack[item][0].extend(kept)
        real()

    item.setup = setup  # not frozen (gc.freeze): a run may count on collecting what they made
    return True
