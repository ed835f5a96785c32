"""affidavit: makes flaky asyncio tests testify.

The public API for test code: ``operation`` and ``assertion`` name the shared state a test's
coroutines touch, so reports can say which operations on which resource ran in the wrong order.
Outside an affidavit run they record nothing and cost next to nothing.

PYTEST_DONT_REWRITE: a worker imports this package before pytest starts, so pytest could not
rewrite its asserts (it has none to rewrite) and would warn, which a project's
``filterwarnings = error`` turns into an error that stops the worker.
"""

from __future__ import annotations

# First: in a worker, the runtime's init moves the interpreter's arenas onto huge pages, which only
# helps for what is imported after it (src/runtime/hugeheap.c).
from . import _runtime  # isort: skip
from ._runtime import assertion  # isort: skip

import asyncio
import functools
import inspect
import random
from typing import Any, Awaitable, Callable, Optional, TypeVar

from .loop import ControlledLoop, ControlledPolicy, install

__all__ = ["operation", "access", "assertion", "replay", "ControlledLoop", "ControlledPolicy", "install", "__version__"]
__version__ = "0.1.0"

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

_ACCESS = {"read": 0, "write": 1}


def operation(name: str, *, resource: str, access: str = "read") -> Callable[[F], F]:
    """Decorate a coroutine function as a named operation on ``resource`` (read or write)."""
    if access not in _ACCESS:
        raise ValueError(f"access must be 'read' or 'write', not {access!r}")
    flags = _ACCESS[access]

    def decorate(fn: F) -> F:
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"operation() decorates coroutine functions (async def), not {fn!r}")

        @functools.wraps(fn)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            _runtime.op_event(_runtime.EV_OP_BEGIN, name, resource, flags)
            try:
                result = await fn(*args, **kwargs)
            except BaseException:
                _runtime.op_event(_runtime.EV_OP_END, name, resource, flags | 2)
                raise
            _runtime.op_event(_runtime.EV_OP_END, name, resource, flags)
            return result

        return wrapper  # type: ignore[return-value]

    return decorate


def access(resource: str, access: str = "read", name: Optional[str] = None) -> None:
    """Record one access to ``resource`` at this point of the running task (``"read"`` or
    ``"write"``), e.g. right after ``current = BALANCE["amount"]``. ``name`` defaults to the
    access kind. Outside an affidavit run it records nothing."""
    if access not in _ACCESS:
        raise ValueError(f"access must be 'read' or 'write', not {access!r}")
    flags = _ACCESS[access]
    label = name if name is not None else access
    _runtime.op_event(_runtime.EV_OP_BEGIN, label, resource, flags)
    _runtime.op_event(_runtime.EV_OP_END, label, resource, flags)


def replay(token: str) -> Callable[[F], Callable[..., None]]:
    """Run an async test under one schedule, exactly: the regression test affidavit writes.

    ``@affidavit.replay("afd1:...")`` on an ``async def`` test makes it a plain test that runs the
    coroutine on a fresh controlled loop under the token's schedule (its costs, delays and `random`
    seed), so the failing interleaving happens every time. When the coroutine finishes, every
    delayed step of the schedule must have run: a test that no longer reaches the step the schedule
    delays passes vacuously, and is reported as a failure instead.
    """
    delays = _runtime.token_delays(token)  # ValueError with the decoder's message for a bad token

    def decorate(fn: F) -> Callable[..., None]:
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"affidavit.replay() decorates async tests (async def), not {fn!r}")

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> None:
            install()
            _runtime.configure(_runtime.MODE_CONTROLLED, token)
            _runtime.recorder_begin(8 << 20)
            random.seed(_runtime.random_seed())
            loop = ControlledLoop()
            try:
                loop.run_until_complete(fn(*args, **kwargs))
            finally:
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for t in pending:
                    t.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.close()
                # the process's clocks are real again for whatever runs after this test
                _runtime.configure(_runtime.MODE_NATURAL, "")
            ran = {(label, ordinal) for label, ordinal, *_ in _runtime.steps()}
            missing = [f"{label}, step {ordinal}" for label, ordinal, _ in delays if (label, ordinal) not in ran]
            if missing:
                raise AssertionError(
                    "affidavit.replay: the schedule's delayed step never ran (" + "; ".join(missing)
                    + "): the test no longer takes the path the token reproduces, so it proves nothing"
                )

        # A plain function to pytest-asyncio (the loop is ours), with the original's parameters
        # visible through __wrapped__ so pytest still passes its fixtures. An asyncio mark copied
        # from the original test would ask pytest-asyncio to run a coroutine that is not there.
        marks = getattr(run, "pytestmark", None)
        if marks:
            run.pytestmark = [m for m in marks if getattr(m, "name", "") != "asyncio"]  # type: ignore[attr-defined]
        return run

    return decorate
