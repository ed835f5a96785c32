"""Session-scoped fixtures made once per worker, before its first fork, as pytest makes them once
per session.

A run is a child forked from the worker, and used to set up every fixture of its test itself, the
session's included: a session fixture that loads a certificate store (``ssl.create_default_context()``,
100 ms) cost that in every run, where pytest pays it once for the whole session (aiosmtplib's suite:
137 ms a run instead of 25 ms). Here the worker sets up, as a test before this one would have, the
session fixtures its tests ask for, and each child starts with them made (a copy of them: what a
run changes in one no other run sees) and tears them down at its end as pytest's last test does.

Only what forking copies faithfully is made in advance: a fixture of the session scope whose
function is synchronous (not a coroutine or an async generator: those need a loop, and the run's
is affidavit's), defined in the user's files or by pytest itself, and whose own fixtures are such
too. If making them starts a thread, leaves a file descriptor open (a socket, a file: copies of a
test would share it), or fails (a warning the session's filters make an error included), they are torn down again at once and every run makes them
itself, as before.
"""

from __future__ import annotations

import inspect
import os
import sys
import threading
import warnings
from typing import Any, Callable, Dict, List, Optional, Set


# What making them may not do (PEP 578 audit events): change the file system outside pytest's base
# temporary directory, take a port or a Unix path, start a process, open a database file. A copy
# of such a fixture in every run would share what it made, and its teardown would run in no run.
_WRITE_EVENTS = ("os.mkdir", "os.remove", "os.rmdir", "os.rename", "os.link", "os.symlink", "os.truncate",
                 "os.chmod", "os.chown", "os.utime", "shutil.rmtree", "shutil.move", "shutil.copyfile")
_OTHER_EVENTS = ("socket.bind", "subprocess.Popen", "os.system", "os.fork", "os.forkpty", "os.exec",
                 "os.posix_spawn", "os.spawn", "sqlite3.connect", "fcntl.flock", "fcntl.lockf")
_watch: Dict[str, Any] = {"on": False, "roots": None, "seen": "", "made": set(), "created": {}}
_hooked = False


def _first_path(args: Any) -> str:
    try:
        return os.path.realpath(os.fsdecode(args[0])) if args and isinstance(args[0], (str, bytes, os.PathLike)) else ""
    except (TypeError, ValueError):
        return ""


def _private(path: str) -> bool:
    """Under the base temporary directory (or roots), what tempfile made while they were being made,
    or a device (/dev/null)."""
    # asked now: the base temporary directory may be made while watched
    roots = [os.path.realpath(r) + os.sep for r in _watch["roots"]()] if _watch["roots"] else []
    return any(path.startswith(r) for r in roots) or path.startswith(("/dev/", "/proc/")) or any(
        path == m or path.startswith(m + os.sep) for m in _watch["made"])


def _audit(event: str, args: Any) -> None:
    if not _watch["on"] or _watch["seen"]:
        return
    if event in ("tempfile.mkstemp", "tempfile.mkdtemp"):
        _watch["made"].add(_first_path(args))
        return
    if event == "open":
        mode = args[1] if len(args) > 1 else "r"
        flags = args[2] if len(args) > 2 else 0
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        path = _first_path(args)
        # a directory opened for writing is an anonymous file (O_TMPFILE): nothing is left
        if writes and path and not _private(path) and not os.path.isdir(path):
            _changed(path, f"it wrote {path}", event)
    elif event in _WRITE_EVENTS:
        path = _first_path(args)
        if not _private(path):
            _changed(path, f"it changed {path or 'a path'} ({event})", event)
    elif event == "socket.bind" and _any_port(args):
        return
    elif event.startswith(_OTHER_EVENTS):
        _watch["seen"] = f"it did {event}"


def _changed(path: str, what: str, event: str) -> None:
    """A change outside the private places. A path that did not exist before it was made here, and
    what is done under it after, count only if it is still there at the end (_residue): a file
    made and removed again (tempfile's first probe of its directory) leaves nothing to share."""
    created = _watch["created"]
    if any(path == c or path.startswith(c + os.sep) for c in created):
        return
    exists = bool(path) and os.path.lexists(path)
    if event in ("open", "os.mkdir") and not exists and path:
        created[path] = what
        return
    if event == "os.mkdir" and exists:
        return  # it fails: nothing changes
    _watch["seen"] = what


def _residue() -> str:
    """What the watch saw: a change, or a path it made that is still there."""
    if _watch["seen"]:
        return str(_watch["seen"])
    return next((what for path, what in _watch["created"].items()
                 if os.path.lexists(path) and not _private(path)), "")


def _any_port(args: Any) -> bool:
    """A bind to port 0: the system picks a free port, a different one for every copy."""
    address = args[1] if len(args) > 1 else None
    return isinstance(address, tuple) and len(address) >= 2 and address[1] == 0


def _hook() -> None:
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True


def watch_begin(roots: Callable[[], List[str]]) -> Dict[str, Any]:
    """Starts watching what the process changes outside the directories roots() names (and what
    tempfile makes); returns the watch it interrupts, for watch_end (watches nest: a fixture that
    makes another in its body)."""
    _hook()
    outer = dict(_watch, made=set(_watch["made"]), created=dict(_watch["created"]))
    _watch.update(on=True, roots=roots, seen="", made=set(), created={})
    return outer


def watch_end(outer: Dict[str, Any]) -> str:
    """What the watch saw that copies of it would share ("" for nothing); the outer watch goes on,
    seeing it too."""
    seen = _residue()
    _watch.update(outer)
    if seen and _watch["on"] and not _watch["seen"]:
        _watch["seen"] = seen
    return seen


def open_fds() -> Set[str]:
    try:
        return set(os.listdir("/proc/self/fd"))
    except OSError:
        return set()


def made_temp() -> bool:
    """Whether a file or directory tempfile made during the last watch is still there."""
    return any(m and os.path.lexists(m) for m in _watch["made"])


def plain_function(func: Any) -> bool:
    f = inspect.unwrap(getattr(func, "__func__", func))
    return not (inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f))


def _whose(func: Any, root: str) -> str:
    """"pytest" for pytest's own fixtures, "user" for those defined under the rootdir outside any
    installed package, "" for any other plugin's."""
    f = inspect.unwrap(getattr(func, "__func__", func))
    module = getattr(f, "__module__", "") or ""
    if module == "_pytest" or module.startswith("_pytest."):
        return "pytest"
    try:
        path = os.path.realpath(inspect.getsourcefile(f) or "")
    except TypeError:
        return ""
    inside = path.startswith(root.rstrip(os.sep) + os.sep)
    return "user" if inside and "site-packages" not in path else ""


def qualifies(name: str, item: Any, memo: Dict[str, bool], accept: Callable[[str, Any], bool],
              depth: int = 0) -> bool:
    """Whether item's fixture name, and every fixture it asks for, is one accept(name, fixturedef)
    takes ("request" always is); memo holds the answers so far."""
    if name == "request":
        return True
    if name in memo:
        return memo[name]
    memo[name] = False  # a cycle (a fixture overriding one of its name) qualifies nothing
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}).get(name)
    if not defs or depth > 50:
        return False
    fd = defs[-1]
    ok = accept(name, fd) and all(qualifies(a, item, memo, accept, depth + 1) for a in getattr(fd, "argnames", ()))
    memo[name] = ok
    return ok


def _made_in_advance(root: str) -> Callable[[str, Any], bool]:
    return lambda name, fd: (str(getattr(fd, "scope", "")) == "session" and plain_function(fd.func)
                             and bool(_whose(fd.func, root)))


def wanted(items: List[Any], root: str) -> List[Any]:
    """(item, name) pairs of the session fixtures to make in advance, each name once."""
    seen: Set[str] = set()
    out: List[Any] = []
    for item in items:
        memo: Dict[str, bool] = {}
        for name in getattr(item, "fixturenames", ()):
            if name not in seen and name != "request" and qualifies(name, item, memo, _made_in_advance(root)):
                seen.add(name)
                out.append((item, name))
    return out


def _session_warning_filters(session: Any, item: Any) -> Any:
    """The warning filters pytest applies around a test's setup (the ini's filterwarnings, -W, the
    item's marks): a warning they make an error fails the fixture here as it would there."""
    try:
        from _pytest.warnings import catch_warnings_for_item

        return catch_warnings_for_item(session.config, ihook=item.ihook, when="runtest", item=item)
    except Exception:  # another pytest: the process's own filters
        return warnings.catch_warnings()


def make(session: Any, items: List[Any]) -> Optional[str]:
    """Makes the session fixtures items ask for that qualify; returns None when they are made (or
    none qualify), else why none is kept."""
    pairs = wanted(items, str(session.config.rootpath))
    if not pairs:
        return None
    state = session._setupstate
    threads = set(threading.enumerate())
    fds = open_fds()
    why: Optional[str] = None
    _hook()
    factory = getattr(session.config, "_tmp_path_factory", None)
    base = getattr(factory, "_basetemp", None)  # made before the first fork when a test asks (worker.py)
    _watch.update(on=True, roots=lambda: [str(base)] if base else [], seen="", made=set(), created={})
    with _session_warning_filters(session, pairs[0][0]):
        try:
            state.setup(session)  # the session node on the stack, as when a first test set up
            for item, name in pairs:
                item._request.getfixturevalue(name)
        except BaseException as exc:  # the run makes it itself and fails as pytest would
            why = f"{type(exc).__name__} while making them"
        finally:
            _watch["on"] = False
    if why is None and _residue():
        why = _residue()
    if why is None and made_temp():
        why = "it left a temporary file"  # which its teardown, run by no run, would remove
    if why is None and [t for t in threading.enumerate() if t not in threads and t.is_alive()]:
        why = "it started a thread"
    if why is None and open_fds() - fds:
        why = "it left a file descriptor open"
    if why is not None:
        try:
            state.teardown_exact(None)
        except BaseException:
            pass
    else:
        # Their teardowns are the session's, which no run is: a run ends with the stack's own
        # teardown of the session node only (its first finalizer), and the fixtures stay made for
        # the next run's copy. Nothing they made lies outside the base temporary directory.
        finalizers, exc = state.stack[session]
        state.stack[session] = (list(finalizers[:1]), exc)
    # the items' requests were used to make them: each gets a fresh one, which finds the session's
    # fixtures through their definitions (made, or torn down to be made again), as a next test does
    for item in items:
        init = getattr(item, "_initrequest", None)
        if init is not None:
            init()
    return why
