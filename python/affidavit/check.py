"""The harness behind ``affidavit check FILE --cls C --method M``: a test built from a class.

The engine writes a two-line test module that calls :func:`harness`; everything else is here.
At import (once, in the worker, before any run) the target is imported and validated: the class
exists, the method is a coroutine function, the constructor and the argument expression work. Any
problem there is a collection error, which the engine turns into one line and exit code 2.

Each run then:

1. builds a fresh object (``C()`` or the ``--init`` expression) and calls the method ``calls``
   times concurrently, one task per call, named after the method (a report says
   ``C.handle_request#3``, not a harness function);
2. checks ``--invariant`` on the object, if given;
3. checks serializability: the object's final state (its attributes, compared structurally, or
   the ``--state`` expression) must equal the state some serial execution of the same calls
   leaves. The serial orders tried are the order the calls completed in, the order they were made,
   their reverse, and then others: every order when there are at most 5 calls (5! = 120), else
   random ones (seeded, so a replay tries the same), up to 8 orders in all. When the first three
   orders all leave the same state, no other is tried: the serial outcome does not depend on the
   order as far as it was measured. The failure message says what was tried. Orders are tried
   only until one matches, so a passing run usually costs one serial execution.

An exception from a concurrent call fails the run; one from a serial call is reported as the
method failing even one call at a time.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import itertools
import math
import os
import random
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

MAX_ORDERS = 8
ALL_ORDERS_UP_TO = 5  # calls; 5! = 120 orders

_SYNC_TYPES: Tuple[type, ...] = (
    asyncio.Lock,
    asyncio.Event,
    asyncio.Condition,
    asyncio.Semaphore,
    asyncio.Queue,
    asyncio.Future,
)


class CheckError(Exception):
    """A target that cannot be checked; the message is the engine's one-line error."""


def _import_file(path: str) -> Any:
    """Imports FILE as pytest's default (prepend) import mode would: the first directory above it
    without an __init__.py goes on sys.path and the module gets its dotted package name."""
    path = os.path.abspath(path)
    directory, name = os.path.split(path)
    parts = [os.path.splitext(name)[0]]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, pkg = os.path.split(directory)
        parts.insert(0, pkg)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    return importlib.import_module(".".join(parts))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def snapshot(value: Any, _depth: int = 0) -> Any:
    """A structural copy of a value that compares with ==: containers element by element, objects
    by their attributes (with their type's name), synchronization primitives and callables left
    out (a lock is not state), anything else by repr."""
    if _depth > 20:
        return "<deep>"
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return value
    if isinstance(value, dict):
        return ("dict", sorted(((repr(k), snapshot(v, _depth + 1)) for k, v in value.items()), key=lambda kv: kv[0]))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [snapshot(v, _depth + 1) for v in value])
    if isinstance(value, (set, frozenset)):
        return ("set", sorted(repr(snapshot(v, _depth + 1)) for v in value))
    if isinstance(value, _SYNC_TYPES) or callable(value):
        return None
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        return (type(value).__qualname__, _attributes(attrs, _depth + 1))
    return repr(value)


def _attributes(attrs: Dict[str, Any], depth: int) -> List[Tuple[str, Any]]:
    return sorted(
        (k, snapshot(v, depth)) for k, v in attrs.items() if not isinstance(v, _SYNC_TYPES) and not callable(v)
    )


def describe_difference(a: Any, b: Any, path: str = "") -> str:
    """The first place two snapshots differ, as `path is a, b`."""
    if type(a) is tuple and type(b) is tuple and len(a) == 2 and len(b) == 2 and a[0] == b[0]:
        x, y = a[1], b[1]
        if isinstance(x, list) and isinstance(y, list):
            if a[0] == "dict" or all(isinstance(e, tuple) and len(e) == 2 and isinstance(e[0], str) for e in x + y):
                dx, dy = dict(x), dict(y)
                for key in sorted(set(dx) | set(dy)):
                    sub = f"{path}[{key}]" if a[0] == "dict" else f"{path}.{key}"
                    if key not in dx or key not in dy:
                        return f"{sub} is {'missing' if key not in dx else 'present'}, {'missing' if key not in dy else 'present'}"
                    if dx[key] != dy[key]:
                        return describe_difference(dx[key], dy[key], sub)
            elif len(x) != len(y):
                return f"{path or 'the state'} has {len(x)} items, {len(y)}"
            else:
                for i, (ex, ey) in enumerate(zip(x, y)):
                    if ex != ey:
                        return describe_difference(ex, ey, f"{path}[{i}]")
    return f"{path or 'the state'} is {_short(_plain(a))}, {_short(_plain(b))}"


def _plain(v: Any) -> Any:
    """A snapshot back in Python's notation where it is a plain container."""
    if type(v) is tuple and len(v) == 2 and isinstance(v[1], list):
        if v[0] == "dict":
            return {k: _plain(x) for k, x in v[1]}
        if v[0] in ("list", "tuple"):
            items = [_plain(x) for x in v[1]]
            return items if v[0] == "list" else tuple(items)
    return v


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


class Target:
    """The class, method and expressions of one check, validated once at import."""

    def __init__(
        self,
        file: str,
        cls: str,
        method: str,
        init: Optional[str],
        args: Optional[str],
        calls: int,
        state: Optional[str],
        invariant: Optional[str],
    ) -> None:
        try:
            module = _import_file(file)
        except BaseException as exc:
            raise CheckError(f"cannot import {file}: {_one_line(exc)}") from None
        self.env: Dict[str, Any] = dict(vars(module))
        klass = getattr(module, cls, None)
        if not isinstance(klass, type):
            raise CheckError(f"{file} has no class {cls}")
        fn = getattr(klass, method, None)
        if fn is None:
            raise CheckError(f"class {cls} has no method {method}")
        if not inspect.iscoroutinefunction(fn):
            raise CheckError(f"{cls}.{method} is not a coroutine function (async def)")
        self.label = f"{cls}.{method}"
        self.cls, self.method, self.calls = klass, method, calls
        self.init = self._compile(init, "--init")
        self.args = self._compile(args, "--args")
        self.state = self._compile(state, "--state")
        self.invariant_text = invariant
        self.invariant = self._compile(invariant, "--invariant")
        obj = self.make()  # once, to refuse a constructor that raises before any run
        if self.state is not None:
            self._state_of(obj)
        for i in range(calls):
            self.arguments(i)

    def _compile(self, expr: Optional[str], option: str) -> Any:
        if expr is None:
            return None
        try:
            return compile(expr, f"<{option}>", "eval")
        except SyntaxError as exc:
            raise CheckError(f"{option} is not a Python expression: {exc.msg}: {expr}") from None

    def make(self) -> Any:
        try:
            return self.cls() if self.init is None else eval(self.init, self.env, {})
        except BaseException as exc:
            what = f"{self.cls.__name__}()" if self.init is None else "--init"
            raise CheckError(f"{what} raised {_one_line(exc)}") from None

    def arguments(self, i: int) -> Tuple[Any, ...]:
        """--args evaluated for call i: a tuple is the positional arguments, anything else the one
        argument."""
        if self.args is None:
            return ()
        try:
            value = eval(self.args, self.env, {"i": i})
        except BaseException as exc:
            raise CheckError(f"--args raised {_one_line(exc)} for i={i}") from None
        return value if isinstance(value, tuple) else (value,)

    def _state_of(self, obj: Any) -> Any:
        if self.state is None:
            return ("state", _attributes(dict(getattr(obj, "__dict__", {})), 0))
        try:
            return snapshot(eval(self.state, self.env, {"obj": obj, "self": obj}))
        except BaseException as exc:
            raise CheckError(f"--state raised {_one_line(exc)}") from None

    async def concurrent(self) -> Tuple[Any, List[int]]:
        """The object after `calls` concurrent calls, and the order the calls completed in."""
        obj = self.make()
        loop = asyncio.get_running_loop()
        done: List[int] = []
        all_done = loop.create_future()
        tasks = []
        for i in range(self.calls):
            task = loop.create_task(getattr(obj, self.method)(*self.arguments(i)))

            def finished(_: Any, i: int = i) -> None:
                done.append(i)
                if len(done) == self.calls and not all_done.done():
                    all_done.set_result(None)

            task.add_done_callback(finished)
            tasks.append(task)
        if tasks:
            await all_done
        for i, task in enumerate(tasks):
            exc = task.exception()
            if exc is not None:
                raise AssertionError(f"call {i} of {self.calls} concurrent {self.label} calls raised {_one_line(exc)}")
        return obj, done

    async def serial(self, order: Sequence[int]) -> Any:
        obj = self.make()
        for i in order:
            try:
                await getattr(obj, self.method)(*self.arguments(i))
            except BaseException as exc:
                raise AssertionError(f"{self.label} fails even one call at a time: {_one_line(exc)}") from None
        return self._state_of(obj)

    def orders(self, completed: List[int]) -> Tuple[List[List[int]], str]:
        n = self.calls
        first = [list(completed), list(range(n)), list(reversed(completed))]
        seen: List[List[int]] = []
        for o in first:
            if o not in seen:
                seen.append(o)
        if n <= ALL_ORDERS_UP_TO:
            rest = [list(p) for p in itertools.permutations(range(n))]
            how = f"the {math.factorial(n)} serial orders (all of them)"
        else:
            rng = random.Random(n)
            rest = []
            while len(seen) + len(rest) < MAX_ORDERS:
                p = list(range(n))
                rng.shuffle(p)
                rest.append(p)
            how = ""
        for o in rest:
            if o not in seen:
                seen.append(o)
        return seen, how

    async def run(self) -> None:
        obj, completed = await self.concurrent()
        if self.invariant is not None:
            try:
                holds = eval(self.invariant, self.env, {"obj": obj, "self": obj})
            except BaseException as exc:
                raise AssertionError(f"--invariant raised {_one_line(exc)}") from None
            if not holds:
                raise AssertionError(f"invariant {self.invariant_text} does not hold after {self.calls} concurrent {self.label} calls")
        got = self._state_of(obj)
        orders, how = self.orders(completed)
        states: List[Any] = []
        for order in orders:
            state = await self.serial(order)
            if state == got:
                return
            states.append(state)
            if len(states) == 3 and states[0] == states[1] == states[2] and len(orders) > 3:
                how = "the 3 serial orders tried (completion, call and reverse order), which all leave one state"
                break
        else:
            if self.calls > ALL_ORDERS_UP_TO:
                how = f"{len(states)} of the {self.calls}! serial orders (completion, call and reverse order, then random ones)"
        raise AssertionError(
            f"not serializable: after {self.calls} concurrent {self.label} calls, "
            f"{describe_difference(got, states[0])} serially in the order they completed; "
            f"the state matches none of {how}"
        )


def harness(
    *,
    file: str,
    cls: str,
    method: str,
    init: Optional[str] = None,
    args: Optional[str] = None,
    calls: int = 50,
    state: Optional[str] = None,
    invariant: Optional[str] = None,
) -> Callable[[], None]:
    """The test function of one check (validated now, run by pytest)."""
    target = Target(file, cls, method, init, args, calls, state, invariant)

    def test() -> None:
        asyncio.run(target.run())

    test.__name__ = test.__qualname__ = f"test_check_{cls}_{method}"
    return test
