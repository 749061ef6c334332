"""The objects a traced function can change besides its arguments: what it reads from its closure and globals
(and the user's functions it names there), and the globals and closure variables it rebinds (`Bindings`)."""

from __future__ import annotations

import dis
import types
from typing import Any

import torch

MISSING = object()  # a name or entry not bound


class Bindings:
    """The module globals (`global g`) or closure cells (`nonlocal n`) a function rebinds, followed like an
    object's attributes: a graph value bound to one of them is written back after each call."""

    def __init__(self, what: str, slots: dict) -> None:
        self.what = what  # "global" or "nonlocal"
        self.slots = slots  # name -> the module's namespace (a global) or the cell (a nonlocal)

    def contents(self) -> list:
        out = []
        for name, slot in self.slots.items():
            if isinstance(slot, dict):
                out.append((name, slot.get(name, MISSING)))
                continue
            try:
                out.append((name, slot.cell_contents))
            except ValueError:  # an empty cell: the name is not bound yet
                out.append((name, MISSING))
        return out

    def assign(self, contents: list) -> None:
        for name, value in contents:
            slot = self.slots[name]
            if isinstance(slot, dict):
                if value is MISSING:
                    slot.pop(name, None)
                else:
                    slot[name] = value
            elif value is MISSING:
                try:
                    del slot.cell_contents
                except ValueError:
                    pass
            else:
                slot.cell_contents = value


_MAX_CALLEES = 3  # functions followed into from the traced one (`f` calls `note`, which changes a global dict)


def watch_captures(fn: Any, watch: Any, depth: int = 0, seen: set | None = None) -> None:
    """Hold the lists, dicts and plain objects `fn` reads from its closure and its globals, and the globals and
    closure variables it rebinds; the same for the user's functions it names there (a called `note(v)` that
    changes a dict `fn` never names). A module (`ta.function(model)`): itself (its submodules too), and what its
    `forward` reads."""
    if isinstance(fn, torch.nn.Module):
        watch.hold(fn)
        fn = type(fn).forward
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    seen = set() if seen is None else seen
    if code is None or id(code) in seen:
        return
    seen.add(id(code))
    stored_globals, stored_cells = _rebound(code)
    glob = getattr(fn, "__globals__", {})
    if stored_globals and isinstance(glob, dict):
        watch.hold(Bindings("global", {n: glob for n in sorted(stored_globals)}))
    cells = {n: c for n, c in zip(code.co_freevars, fn.__closure__ or ()) if n in stored_cells}
    if cells:
        watch.hold(Bindings("nonlocal", cells))
    for value in read_through(fn, code):
        watch.hold(value)
        if depth < _MAX_CALLEES and users_function(value):
            watch_captures(value, watch, depth + 1, seen)


def users_function(value: Any) -> bool:
    """A Python function of the user's (not of torch or of this library: their state is staged)."""
    return isinstance(value, types.FunctionType) and \
        not (value.__module__ or "").startswith(("torch.", "torch_autograph"))


_REBINDING = frozenset(dis.opmap[n] for n in ("STORE_GLOBAL", "DELETE_GLOBAL", "STORE_DEREF", "DELETE_DEREF"))


def _rebound(code: types.CodeType) -> tuple[set, set]:
    """(global names, free variable names) that `code` or the code nested in it assigns or deletes."""
    globals_, cells = set(), set()
    if not _REBINDING.isdisjoint(code.co_code[::2]):  # the opcodes; decoding every instruction costs more
        for ins in dis.get_instructions(code):
            if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
                globals_.add(ins.argval)
            elif ins.opname in ("STORE_DEREF", "DELETE_DEREF"):
                cells.add(ins.argval)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            more_globals, more_cells = _rebound(c)
            globals_ |= more_globals
            cells |= more_cells & set(c.co_freevars)
    return globals_, cells


def read_through(fn: Any, code: types.CodeType) -> list[Any]:
    """The objects `fn` (with `code`) can read without being handed them: its closure cells' contents and the
    globals its code, nested code included, names."""
    values = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    glob = getattr(fn, "__globals__", {})
    values.extend(glob[name] for name in global_names(code) if name in glob)
    return values


def global_names(code: types.CodeType):
    yield from code.co_names
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from global_names(c)
