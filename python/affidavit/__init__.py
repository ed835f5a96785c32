"""affidavit: makes flaky asyncio tests testify.

The public API for test code: ``operation`` and ``assertion`` name the shared state a test's
coroutines touch, so reports can say which operations on which resource ran in the wrong order.
Outside an affidavit run they record nothing and cost next to nothing.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Awaitable, Callable, Optional, TypeVar

from . import _runtime
from ._runtime import assertion
from .loop import ControlledLoop, ControlledPolicy, install

__all__ = ["operation", "access", "assertion", "ControlledLoop", "ControlledPolicy", "install", "__version__"]
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
