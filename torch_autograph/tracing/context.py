"""Which trace is being recorded in this thread: one ContextVar, read by everything that records.

Threads (and asyncio tasks) trace independently. `outside_trace()` runs code
eagerly inside a trace (`ta.init_scope`).
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Any, Iterator

Scope = Any  # trace.Scope: it imports (through its imports) this module, so it is not imported here

_current: contextvars.ContextVar["Scope | None"] = contextvars.ContextVar("torch_autograph_trace", default=None)


# GradientTapes (anything with `_variable_accessed(var)`, and `module_ran(module)` to hear of modules that ran)
# that want to hear about Variable reads in this thread.
ACCESS_WATCHERS: contextvars.ContextVar[tuple] = contextvars.ContextVar("torch_autograph_access_watchers",
                                                                        default=())


def current() -> "Scope | None":
    """The trace being recorded in this thread, if any."""
    return _current.get()


@contextmanager
def activate(state: "Scope | None") -> Iterator["Scope | None"]:
    """Make `state` the current trace of this thread for the duration of the block (None: no trace)."""
    token = _current.set(state)
    try:
        yield state
    finally:
        _current.reset(token)


@contextmanager
def outside_trace() -> Iterator[None]:
    """Run the enclosed code eagerly, as if no trace were being recorded."""
    with activate(None):
        yield


class Traced:
    """Marker base of the objects that stand for graph values while tracing (GraphTensor, GraphList).

    Each has `_value` (its graph `Value`) and `_trace` (the Scope that made it).
    """

    __slots__ = ()
