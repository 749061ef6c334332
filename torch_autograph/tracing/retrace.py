"""The one signal a trace gives to be traced again, knowing more: `Retrace`.

Whoever finds the knowledge raises it; `function/pipeline.concrete_function`
is the one place that catches it, traces again with the knowledge added, and
writes the reason into the trace's notes (`trace_history()`)::

    raise NeedsSizeError(...)                  # a size decided by code: trace with the call's sizes behind it
    raise Retrace("the first trace created Variables", singleton_check=True)

`knowledge` holds keyword arguments of the next trace (`Knowledge`'s fields).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Knowledge:
    """What the next trace of a call knows that the first one did not.

    Attributes:
        backed: None dims are backed by the call's sizes (code decided on a size).
        singleton_check: the function created Variables on its first trace; creating one again is an error.
    """

    backed: bool = False
    singleton_check: bool = False

    def learn(self, knowledge: dict[str, Any]) -> "Knowledge":
        return replace(self, **knowledge)


class Retrace(Exception):
    """Trace the call again with `knowledge` (fields of `Knowledge`); `reason` goes into the trace's notes."""

    def __init__(self, reason: str, **knowledge: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.knowledge = knowledge
