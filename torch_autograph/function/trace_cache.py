"""The ConcreteFunctions of one Function: lookup by trace key, bounded, safe under concurrent calls.

Calls from many threads read the cache without a lock: every structure a
reader touches is replaced whole on a write (copy on write), never changed in
place, so a reader sees the old or the new one. Writes (a new trace, an
eviction, a newly remembered key) take the cache's lock, which also makes
concurrent first calls of one signature trace once.

Bounds: at most `limit()` traces (least recently used evicted); the per-call
lookup tables (`by_key`, `fast`) keep at most `2 * limit()` entries each
(oldest first out), so 10,000 calls with 10,000 shapes under
`reduce_retracing=True` leave them small.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, NamedTuple

from . import signatures as sig

if TYPE_CHECKING:
    from .concrete import ConcreteFunction

Key = tuple  # (grad mode, argument trace types)


def _bounded(d: dict, limit: int) -> dict:
    """`d` without its oldest entries beyond `limit` (a new dict)."""
    if len(d) <= limit:
        return d
    items = list(d.items())[len(d) - limit:]
    return dict(items)


class Broken(NamedTuple):
    """A trace `find` skipped because the call breaks a size assumption it made: why, and its trace types."""

    reason: str
    arg_types: tuple


class TraceCache:
    """Traces by key, with subtype matching, LRU eviction and fast-path tables for the call path.

    Attributes read on the call path (no lock):
        fast: {(grad, per-argument key...): (ConcreteFunction, positions of its tensor arguments or None)}.
        mono: (ConcreteFunction, grad, dtype, shape, device) of the last one-tensor call, or None.
    """

    def __init__(self, limit: Callable[[], int]) -> None:
        self._limit = limit
        self.lock = threading.RLock()
        self._traces: dict[int, "ConcreteFunction"] = {}  # id -> cf, insertion order
        self._by_key: dict[Key, tuple["ConcreteFunction", ...]] = {}
        self.fast: dict[tuple, tuple["ConcreteFunction", tuple | None]] = {}
        self.mono: tuple | None = None

    # ----- reading ------------------------------------------------------------------------
    @property
    def concrete_functions(self) -> list["ConcreteFunction"]:
        return list(self._traces.values())

    def __len__(self) -> int:
        return len(self._traces)

    def __contains__(self, cf: "ConcreteFunction") -> bool:
        return self._traces.get(id(cf)) is cf

    def latest(self) -> "ConcreteFunction | None":
        traces = self._traces
        return next(reversed(traces.values())) if traces else None

    def find(self, key: Key, bound: dict | None = None) -> "tuple[ConcreteFunction | None, Broken | None]":
        """(the trace for `key`, None) — an exact match, else the most specific trace `key` is a subtype of whose
        size assumptions `bound` (the call's arguments; None for a spec-only lookup) keeps — or (None, the last
        trace skipped for a size assumption the call breaks, or None)."""
        broken: Broken | None = None
        for cf in self._by_key.get(key, ()):
            if cf.guards_hold():
                why = self._sizes_break(cf, bound)
                if why is None:
                    return cf, None
                broken = why
        grad, types_ = key
        best = None
        for cf in tuple(self._traces.values()):
            if cf.grad != grad or not cf.guards_hold():
                continue
            ct = tuple(cf.arg_types.values())
            if len(ct) == len(types_) and all(sig.is_subtype(a, b) for a, b in zip(types_, ct)):
                why = self._sizes_break(cf, bound)
                if why is not None:
                    broken = why
                    continue
                if best is None or sig.generality(ct) < sig.generality(tuple(best.arg_types.values())):
                    best = cf
        if best is not None:
            with self.lock:
                if best in self:
                    self._remember_key(key, best)
        return best, (None if best is not None else broken)

    @staticmethod
    def _sizes_break(cf: "ConcreteFunction", bound: dict | None) -> "Broken | None":
        broken = cf.sizes_break(bound) if bound is not None else None
        return None if broken is None else Broken(f"{cf.name} assumed {broken}", tuple(cf.arg_types.values()))

    def generalize(self, grad: bool, types_: tuple) -> tuple:
        """`reduce_retracing=True`: the most specific common supertype of `types_` and the latest trace's."""
        for cf in reversed(tuple(self._traces.values())):
            if cf.grad != grad:
                continue
            ct = tuple(cf.arg_types.values())
            if len(ct) != len(types_):
                continue
            sup = [sig.common_supertype(a, b) for a, b in zip(types_, ct)]
            if all(s is not None for s in sup):
                return tuple(sup)
        return types_

    # ----- writing (under the lock) -----------------------------------------------------------
    def add(self, key: Key, cf: "ConcreteFunction") -> None:
        """Insert a new trace for `key`; evict the least recently used beyond the limit."""
        with self.lock:
            # `last_used` is the call count at the last use (set by the caller); the newest trace is never evicted.
            cf.last_used = max((c.last_used for c in self._traces.values()), default=0) + 1
            self._traces = {**self._traces, id(cf): cf}
            self._remember_key(key, cf)
            limit = self._limit()
            while len(self._traces) > limit:
                self._evict(min(self._traces.values(), key=lambda c: c.last_used))
            self.mono = None

    def remember_fast(self, key: tuple, cf: "ConcreteFunction", positions: tuple | None, mono: tuple | None) -> None:
        """Remember the call-path key of a call that ran `cf` (ignored if `cf` was evicted meanwhile)."""
        with self.lock:
            if cf not in self:
                return
            self.fast = _bounded({**self.fast, key: (cf, positions)}, 2 * self._limit())
            if mono is not None:
                self.mono = mono

    def _remember_key(self, key: Key, cf: "ConcreteFunction") -> None:
        known = self._by_key.get(key, ())
        if cf not in known:
            self._by_key = _bounded({**self._by_key, key: known + (cf,)}, 2 * self._limit())

    def _evict(self, victim: "ConcreteFunction") -> None:
        self._traces = {k: c for k, c in self._traces.items() if c is not victim}
        self._by_key = {k: kept for k, cfs in self._by_key.items()
                        if (kept := tuple(c for c in cfs if c is not victim))}
        self.fast = {k: e for k, e in self.fast.items() if e[0] is not victim}
        if self.mono is not None and self.mono[0] is victim:
            self.mono = None
