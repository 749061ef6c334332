"""Python objects a graph loop or `if` changes without naming them, carried like loop variables and branch outputs.

AutoGraph carries the variables a loop or `if` assigns by name, `c.k` included. Library code changes objects the
user's code never names: a Hugging Face cache's `update` runs `self.keys = torch.cat([self.keys, k], -2)` inside
the model's forward, and a decoding loop around the model changes `cache.layers[i].keys` at every step. Traced
once, such a write would leave a value of the loop body's sub-graph in the object: out of scope after the loop,
and the object would hold what one traced iteration made, not what the last iteration at run time made.

So the objects the loop body or the branches can reach (what their functions read from their closures and
globals, and the lists, dicts and plain objects inside them) are snapshot before each sub-trace. An entry the
sub-trace set to a graph value or to another Python number is found after it, the sub-trace is undone and the
loop or `if` traced again with that entry as one more loop variable (branch output): the entry holds the loop
variable while the body is traced, and the loop's result after it. Entries added, removed or lists grown with
graph values inside the sub-trace cannot be carried (their number would be decided at run time) and are refused
at the loop's line. Changes to other Python values stay what they are for all Python side effects of a traced
function: made once, while tracing.
"""

from __future__ import annotations

import types
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import torch

from ..autograph import Origin
from ..state import StateEffectError, global_names, object_kind, users_function
from ..tracing import SYMBOLIC, GraphList, Traced, current

_MAX_DEPTH = 4  # containers nested deeper than this are not followed
_MAX_OBJECTS = 256  # nor more than this many objects per loop or `if`
_NUMBERS = (bool, int, float)
_MAX_WRAPPERS = 3  # functions in closure cells followed into, one inside the other


class Slot:
    """One entry of a Python object: an attribute, a dict key or a list position (`path` names it)."""

    def __init__(self, obj: Any, kind: str, key: Any, path: str) -> None:
        self.obj, self.kind, self.key, self.path = obj, kind, key, path

    @property
    def ident(self) -> tuple:
        return (id(self.obj), self.key)

    def get(self) -> Any:
        if self.kind == "attrs":
            return vars(self.obj)[self.key]
        return self.obj[self.key]

    def set(self, value: Any) -> None:
        if self.kind == "attrs":
            vars(self.obj)[self.key] = value  # as `obj.key = value` stores it, without a property's setter again
        else:
            self.obj[self.key] = value


class Changed(Exception):
    """A sub-trace of `owner` changed entries it does not carry yet (`slots`): trace it again carrying them."""

    def __init__(self, owner: "Objects", slots: list[Slot]) -> None:
        self.owner, self.slots = owner, slots


class Objects:
    """The Python objects one loop or `if` can reach, and the entries of them it carries."""

    def __init__(self, held: list[tuple[Any, str, str]], origin: Origin) -> None:
        self.held = held  # (object, kind, path)
        self.origin = origin
        self.outer = current()
        watch = self.outer.trace.python_state if self.outer is not None else None
        # Objects the call's own watch follows: it refuses their changes itself, at the line that made them.
        self.watched = set() if watch is None else \
            {id(o) for o, _, _ in watch.held} | {id(c) for c, _, _ in watch.arg_containers}
        self.carried: list[Slot] = []
        self.initial: list[Any] = []  # the carried entries' values before the loop or `if`

    @classmethod
    def of(cls, fns: Sequence[Callable], origin: Origin) -> "Objects | None":
        """The objects `fns` (the generated loop body and test, or the branches) read, or None if none."""
        held: list[tuple[Any, str, str]] = []
        seen: set[int] = set()
        for name, root in _roots(fns):
            _follow(root, name, 0, held, seen)
        return cls(held, origin) if held else None

    # ----- the carried entries as extra loop variables or branch outputs -----------------------------
    def names(self) -> tuple[str, ...]:
        return tuple(s.path for s in self.carried)

    def carry(self, slots: list[Slot]) -> None:
        known = {s.ident for s in self.carried}
        for s in slots:
            if s.ident not in known:
                self.carried.append(s)
                self.initial.append(s.get())
                known.add(s.ident)

    @contextmanager
    def entered(self, values: Sequence[Any], detect: bool = True) -> Iterator[list]:
        """Run a sub-trace with the carried entries holding `values`; yields a list to put its outputs in.

        After it, the entries it changed that are not carried yet raise `Changed`; inside a sub-trace, every
        entry it set to a graph value is put back (its value belongs to the sub-graph, which ends here).
        """
        for slot, v in zip(self.carried, values):
            slot.set(v)
        before = [(obj, kind, path, _contents(obj, kind)) for obj, kind, path in self.held]
        result: list = []
        inside = current() is not self.outer  # a sub-graph (not a loop run as Python): it ends here
        found: list[Slot] = []
        abandoned = True  # the sub-trace raised: every change it made is undone, whatever its values
        try:
            yield result
            if inside and detect:
                found = self._changes(before, result)
            abandoned = bool(found)  # (found: the sub-trace runs again, carrying them; this one is dropped)
        finally:
            if inside:  # nothing of the sub-graph may stay in the objects
                self._restore(before, abandoned)
        if found:
            raise Changed(self, found)

    def read(self) -> tuple:
        return tuple(s.get() for s in self.carried)

    def store(self, values: Sequence[Any]) -> None:
        """The loop's or `if`'s results into the entries it carries."""
        for slot, v in zip(self.carried, values):
            slot.set(v)

    # ----- what a sub-trace changed ------------------------------------------------------------------
    def _changes(self, before: list, outputs: list) -> list[Slot]:
        named = _ids_in(outputs, set(), 0)  # what AutoGraph carries by name (`c.k`, `y["a"]`)
        carried = {s.ident for s in self.carried}
        found: list[Slot] = []
        for obj, kind, path, old in before:
            if id(obj) in named:
                continue
            new = _contents(obj, kind)
            refuse = id(obj) not in self.watched
            if kind == "list":
                if len(new) != len(old):
                    # Grown with graph values: refused unless watched (the call's effects replay those). Grown
                    # with Python values only: the trace ran that code once, the graph decides how often it
                    # runs, and nothing could replay it (a `log.append(i)` in a loop that breaks on a tensor).
                    if (refuse and any(_is_graph(v) for _, v in new)) or not any(_is_graph(v) for _, v in new):
                        self._refuse(f"{path} grows or shrinks")
                    continue
                pairs = [(i, o, n) for (i, o), (_, n) in zip(old, new)]
            else:
                old_d = dict(old)
                added = [k for k, v in new if k not in old_d and _is_graph(v) and id(v) not in named]
                if added and refuse:
                    self._refuse(f"{_entry(path, kind, added[0])} is first set")
                new_d = dict(new)
                if refuse and any(k not in new_d for k in old_d) and any(_is_graph(v) for _, v in old):
                    gone = next(k for k in old_d if k not in new_d)
                    self._refuse(f"{_entry(path, kind, gone)} is deleted")
                pairs = [(k, old_d[k], v) for k, v in new if k in old_d]
            for key, o, n in pairs:
                if o is n or (id(obj), key) in carried or id(n) in named:
                    continue
                if _carriable(o, n):
                    found.append(Slot(obj, kind, key, _entry(path, kind, key)))
        return found

    def _restore(self, before: list, abandoned: bool = False) -> None:
        """Put back what a sub-trace set to graph values; after one that raised (`abandoned`: a caller may trace
        the code again another way), everything it changed."""
        changed = (lambda o, n: o is not n) if abandoned else _carriable
        for obj, kind, _, old in before:
            new = _contents(obj, kind)
            if kind == "list":
                if (abandoned and len(new) != len(old)) or (
                        len(new) == len(old) and any(changed(o, n) for (_, o), (_, n) in zip(old, new))):
                    obj[:] = [o for _, o in old]
                continue
            old_d = dict(old)
            if abandoned:
                for k in [k for k in old_d if k not in dict(new)]:
                    Slot(obj, kind, k, "").set(old_d[k])
            for k, v in new:
                if changed(old_d.get(k, _MISSING), v):
                    if k in old_d:
                        Slot(obj, kind, k, "").set(old_d[k])
                    elif kind == "attrs":
                        del vars(obj)[k]
                    else:
                        del obj[k]
        # Last: `before` saw the carried entries holding the sub-trace's inputs, which end with it too.
        for slot, v in zip(self.carried, self.initial):
            slot.set(v)

    def _refuse(self, what: str) -> None:
        o = self.origin
        raise StateEffectError(
            f"{what} inside the loop or `if` at {o} (`{o.source_line}`), whose condition is a graph value: the "
            f"graph decides at run time how often that code runs, so the object's structure would depend on it. "
            f"Give the entry its value (a tensor of the right shape) before the loop or `if`, and update it there")


_MISSING = object()


def _roots(fns: Sequence[Callable], depth: int = 0) -> Iterator[tuple[str, Any]]:
    """The objects `fns` read: their closure cells (by variable name) and the globals their code names, and
    those of the functions in their cells (AutoGraph's wrappers of a loop body, an unrolled iteration) and of
    the user's functions among those globals (what a called function changes)."""
    for fn in fns:
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(value, types.FunctionType) and depth < _MAX_WRAPPERS:
                yield from _roots((value,), depth + 1)
            else:
                yield name, value
        glob = getattr(fn, "__globals__", {})
        for name in global_names(code):
            if name in glob:
                value = glob[name]
                yield name, value
                if depth < _MAX_WRAPPERS and users_function(value):
                    yield from _roots((value,), depth + 1)  # a called `note(v)` changing a dict never named here


def _follow(obj: Any, path: str, depth: int, held: list, seen: set) -> None:
    if depth > _MAX_DEPTH or id(obj) in seen or len(seen) >= _MAX_OBJECTS:
        return
    kind = object_kind(obj)
    if kind is None or kind == "module":  # (a module's attributes: AutoGraph carries the `self.x` it names)
        return
    seen.add(id(obj))
    held.append((obj, kind, path))
    for key, v in _contents(obj, kind):
        _follow(v, _entry(path, kind, key), depth + 1, held, seen)


def _contents(obj: Any, kind: str) -> list:
    """(key, value) pairs: a list's positions, a dict's items, an object's attributes."""
    if kind == "list":
        return list(enumerate(obj))
    if kind == "dict":
        return list(obj.items())
    return list(vars(obj).items())


def _entry(path: str, kind: str, key: Any) -> str:
    return f"{path}.{key}" if kind == "attrs" else f"{path}[{key!r}]"


def _is_graph(x: Any) -> bool:
    return (isinstance(x, Traced) and isinstance(x, (torch.Tensor, GraphList))) or isinstance(x, SYMBOLIC)


def _carriable(old: Any, new: Any) -> bool:
    """Whether an entry that held `old` before a sub-trace and `new` after it is carried through it."""
    if new is old:
        return False
    return _is_graph(new) or (type(new) in _NUMBERS and type(old) in _NUMBERS and new != old)


def _ids_in(x: Any, ids: set, depth: int) -> set:
    """The ids of `x` and of the lists, tuples and dicts in it, and of their items."""
    ids.add(id(x))
    if depth < _MAX_DEPTH and type(x) in (list, tuple, dict):
        for v in (x.values() if type(x) is dict else x):
            _ids_in(v, ids, depth + 1)
    return ids
