"""Why each trace happened, and the warning when a function retraces too often.

Every trace of a Function is a `TraceEvent` naming what changed (which
argument, from what to what; a module's train/eval mode; the grad mode).
A `RetraceMonitor` per Python function (shared by every Function wrapping it,
so a `ta.function` re-created in a loop is noticed) logs a warning when 5 of
its last calls (within 10) traced, at most twice.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

from ..graph import autocast_state
from ..logs import logger
from . import signatures as sig


@dataclass(frozen=True)
class TraceEvent:
    """One trace of a Function: which one, for what signature, and why it was needed."""

    number: int
    signature: str
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return f"trace #{self.number} {self.signature}: " + "; ".join(self.reasons)


class RetraceMonitor:
    """Counts calls and traces of one Python function, across every Function wrapping it."""

    __slots__ = ("calls", "traces", "trace_calls", "warned", "_lock", "__weakref__")
    WINDOW = 10  # calls
    TRACES = 5  # traces within the window that make the warning
    WARNINGS = 2  # at most, per Python function

    def __init__(self) -> None:
        self.calls = 0
        self.traces = 0
        self.trace_calls: list[tuple[int, TraceEvent]] = []  # (call number, event) of the last TRACES traces
        self.warned = 0
        self._lock = threading.Lock()

    def traced(self, event: TraceEvent, python_function: Any) -> None:
        """Note a trace; warn when the function retraces too often."""
        with self._lock:
            self.traces += 1
            self.trace_calls.append((self.calls, event))
            del self.trace_calls[:-self.TRACES]
            recent = list(self.trace_calls)
            if not (len(recent) == self.TRACES and self.calls - recent[0][0] < self.WINDOW
                    and self.warned < self.WARNINGS):
                return
            self.warned += 1
            window = max(self.calls - recent[0][0] + 1, len(recent))  # traces by get_concrete_function count too
        why = "\n".join(f"  - {e}" for _, e in recent)
        logger.warning(
            "%d out of the last %d calls to %s triggered retracing. Tracing is expensive; the reasons were:\n%s\n"
            "Common causes: (1) creating the ta.function repeatedly in a loop: define it once, outside; "
            "(2) tensors of changing shapes: pass reduce_retracing=True or an input_signature with None dims; "
            "(3) Python values or new objects as arguments: pass tensors instead.",
            self.TRACES, window, python_function, why)


class _Monitors:
    """One RetraceMonitor per Python function, held weakly by the function."""

    def __init__(self) -> None:
        self._by_function: "weakref.WeakKeyDictionary[Any, RetraceMonitor]" = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def for_function(self, fn: Any) -> RetraceMonitor:
        key = getattr(fn, "__func__", fn)
        with self._lock:
            try:
                m = self._by_function.get(key)
                if m is None:
                    m = self._by_function[key] = RetraceMonitor()
                return m
            except TypeError:  # not weak-referenceable: a monitor of its own
                return RetraceMonitor()


monitors = _Monitors()


def explain(last: Any, grad: bool, types_: tuple, arg_names: list[str], other_traces: int,
            function_name: str) -> list[str]:
    """Why a call with `types_` needs a new trace, compared with the most recent trace `last` (None: the first)."""
    if last is None:
        if other_traces:  # e.g. ta.function(f) re-created in a loop, or another instance of a decorated method
            return [f"first call of a new Function for {function_name}; other Function objects wrapping the "
                    f"same Python function traced it {other_traces} time{'s' if other_traces > 1 else ''} before"]
        return ["first call"]
    reasons = []
    if last.grad != grad:
        reasons.append(f"grad mode {'enabled' if last.grad else 'disabled'} -> {'enabled' if grad else 'disabled'}")
    for name, old, new in zip(arg_names, last.arg_types.values(), types_):
        reasons += sig.diff(old, new, f"argument {name!r}")
    now = autocast_state()
    if now != last.autocast:
        reasons.append(f"autocast around the call {_autocast_words(last.autocast)} -> {_autocast_words(now)}")
    if last.structure is not None and not last.structure.holds():
        reasons.append(last.structure.reason())
    if last.effects is not None and last.effects.guard and not last.effects.guard_holds():
        reasons.append(last.effects.guard_reason())
    if last.reads is not None and not last.reads.holds():
        reasons.append(last.reads.reason())
    for ref, training in last.module_guards:
        m = ref()
        if m is not None and m.training != training:
            reasons.append(f"module {type(m).__name__} at {id(m):#x} switched "
                           f"{'train' if training else 'eval'} -> {'train' if m.training else 'eval'} mode")
    return reasons or ["no trace matched (evicted from the cache, or a new structure)"]


def _autocast_words(state: tuple | None) -> str:
    if not state:
        return "off"
    return ", ".join(f"{device} {str(dtype).replace('torch.', '')}" for device, dtype in state)
