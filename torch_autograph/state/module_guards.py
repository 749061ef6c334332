"""Guards on the modules a trace read: a replaced submodule, parameter or buffer makes the next call trace again.

A graph reads the parameters and buffers it captured by reference, so in-place updates (an optimizer step,
`load_state_dict(sd)`, `p.data.copy_(t)`) are seen without a retrace. Replacing one is not: after
`m[0] = nn.Linear(2, 2)`, `lin.weight = nn.Parameter(t)`, `m.load_state_dict(sd, assign=True)`, `del m[2]` or
`del lin.bias` the graph would still compute with the old objects (or without the error eager raises). Like
torch.compile's guards on module identity, each trace keeps, for the modules it depends on, which object every
entry of their `_parameters`, `_buffers` and `_modules` holds, and the call path checks them before it runs the
graph; a call that finds another object traces again, the reason (which module, which entry) going into
`trace_history()`.

The modules a trace depends on: those that ran, those owning a tensor the graph captured, and the modules
between them and the objects the function reads (its closure, its globals, the instance of a method, its
arguments), as `m[1](x)` reads `m._modules` without running `m`.

The per-call check is one generated expression, no Python loop: a dict compared whole with a copy of it where
`==` on its values is identity (`_compile`), else `d[k] is v` and `len(d) == n` tests
(benchmarks/bench_module_guards.py times them). Only entries are compared, by identity, never values: an
in-place update
is what the graph reads anyway, and a tensor's `==` would compare elements.
"""

from __future__ import annotations

import functools
import types
import weakref
from typing import Any

import torch

from .captures import read_through

_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict, torch.nn.ParameterList,
               torch.nn.ParameterDict)
_ENTRY_WORDS = {"_parameters": "parameter", "_buffers": "buffer", "_modules": "submodule"}
_MAX_DEPTH = 3  # how deep into plain containers and objects of the closure roots are looked for


class ModuleStructure:
    """What the entries of the modules a trace depends on held when it ran, checked at every call."""

    def __init__(self, entries: list[tuple[torch.nn.Module, str, str, Any]],
                 sizes: list[tuple[torch.nn.Module, str, int]]) -> None:
        self.holds = _compile(entries, sizes)
        # For the reason only, and weakly: a trace must not keep alive the instance of the method it traced (its
        # Function is held weakly by the instance). The dicts `holds` tests do not refer to their module.
        self._entries = tuple((weakref.ref(m), *rest) for m, *rest in entries)
        self._sizes = tuple((weakref.ref(m), *rest) for m, *rest in sizes)

    def __len__(self) -> int:
        return len(self._entries) + len(self._sizes)

    def reason(self) -> str:
        """What changed since the trace (the first difference found), for `trace_history()`."""
        for ref, where, key, obj in self._entries:
            m = ref()
            if m is None:
                continue
            if where == "":
                now = vars(m).get(key)
                if now is not obj:
                    return f"the {_ENTRY_WORDS[key]}s of {_name(m)} were rebuilt (as `del m[i]` does)"
                continue
            now = vars(m)[where].get(key, _MISSING) if isinstance(vars(m).get(where), dict) else _MISSING
            if now is not obj:
                word = _ENTRY_WORDS[where]
                if now is _MISSING:
                    return f"{word} {key!r} of {_name(m)} was deleted"
                return f"{word} {key!r} of {_name(m)} was replaced ({_short(obj)} -> {_short(now)})"
        for ref, where, n in self._sizes:
            m = ref()
            if m is None:
                continue
            now = len(vars(m)[where])
            if now != n:
                return f"{_name(m)} has {now} {_ENTRY_WORDS[where]}s, {n} when traced"
        return "a module the trace read changed"


_MISSING = object()


def _compile(entries: tuple, sizes: tuple) -> Any:
    """`holds()`: True while every entry holds its object. One expression, run at every call of the graph.

    A dict all of whose entries are guarded is compared whole, `d == {k: v, ...}` (one C loop over its keys,
    its size included), where `==` on its values can only be identity: modules whose class keeps `object`'s
    `__eq__`, None, and plain tensors and parameters of more than one element (a new one of the same shape makes
    `==` an elementwise tensor, whose truth raises: caught, the guard fails). Other dicts (a one-element
    tensor, whose `==` would compare values) get one `d[k] is v` test per entry.
    """
    env: dict[str, Any] = {}
    tests = []
    groups: dict[int, list] = {}
    for m, where, key, obj in entries:
        d = vars(m) if where == "" else vars(m)[where]
        groups.setdefault(id(d), [d]).append((key, obj))
    whole = {i for i, (d, *kv) in groups.items() if len(kv) == len(d) and all(_identity_eq(v) for _, v in kv)}
    for n, (i, (d, *kv)) in enumerate(groups.items()):
        env[f"d{n}"] = d
        if i in whole:
            env[f"e{n}"] = dict(kv)
            tests.append(f"d{n} == e{n}")
            continue
        for j, (key, obj) in enumerate(kv):
            env[f"k{n}_{j}"], env[f"v{n}_{j}"] = key, obj
            tests.append(f"d{n}[k{n}_{j}] is v{n}_{j}")
    for i, (m, where, n) in enumerate(sizes):
        if id(vars(m)[where]) in whole:
            continue  # (compared whole: its size too)
        env[f"s{i}"] = vars(m)[where]
        tests.append(f"len(s{i}) == {n}")
    if not tests:
        return lambda: True
    # A dict the module later rebuilds (Sequential.__delitem__) is caught by the test on the module's __dict__
    # (the old dict still compares equal); a deleted key raises KeyError, a tensor's `==` RuntimeError.
    # The values as defaults of the function: read as fast locals.
    src = f"def holds({', '.join(f'{k}={k}' for k in env)}):\n    try:\n        return " + " and ".join(tests) + \
        "\n    except Exception:\n        return False\n"
    code = compile(src, "<torch_autograph module guards>", "exec")
    exec(code, env)  # noqa: S102 (the code is ours: names of the values bound above)
    return env["holds"]


def _identity_eq(v: Any) -> bool:
    """Whether `v == w` for another object `w` is False or raises, never True (see `_compile`)."""
    if v is None:
        return True
    if type(v) in (torch.Tensor, torch.nn.Parameter, torch.nn.Buffer):
        return v.numel() > 1
    return isinstance(v, torch.nn.Module) and type(v).__eq__ is object.__eq__


def _name(m: torch.nn.Module) -> str:
    return f"{type(m).__name__} at {id(m):#x}"


def _short(x: Any) -> str:
    if x is None:
        return "None"
    if isinstance(x, torch.Tensor):
        return f"{type(x).__name__}{list(x.shape)} at {id(x):#x}"
    return f"{type(x).__name__} at {id(x):#x}"


def module_structure(ran: list[torch.nn.Module], captured: set[int], roots: list[Any]) -> ModuleStructure | None:
    """The guard of one trace: `ran`, the modules whose forward ran; `captured`, ids of the tensors the graph
    reads by reference; `roots`, the objects the function reads (its closure, globals, instance, arguments)."""
    memo: dict[int, bool] = {}
    ran_ids = {id(m) for m in ran}
    guarded: dict[int, torch.nn.Module] = {id(m): m for m in ran}

    def matters(m: torch.nn.Module) -> bool:
        key = id(m)
        if key in memo:
            return memo[key]
        memo[key] = False  # (a cycle of modules)
        owns = key in ran_ids or any(id(t) in captured for d in (m._parameters, m._buffers)
                                     for t in d.values() if t is not None)
        kids = [matters(c) for c in m._modules.values() if c is not None]
        memo[key] = owns or any(kids)
        if memo[key]:
            guarded.setdefault(key, m)
        return memo[key]

    for m in _modules_in(roots):
        matters(m)
    if not guarded:
        return None
    entries: list = []
    sizes: list = []
    for m in guarded.values():
        d = vars(m)
        if not all(isinstance(d.get(w), dict) for w in _ENTRY_WORDS):  # (dicts, or OrderedDicts after `del m[i]`)
            continue  # not initialised as torch does it: nothing known to guard
        has_kids = bool(m._modules)
        if has_kids or isinstance(m, _CONTAINERS):
            entries.append((m, "", "_modules", m._modules))
            sizes.append((m, "_modules", len(m._modules)))
        if isinstance(m, (torch.nn.ParameterList, torch.nn.ParameterDict)):
            entries.append((m, "", "_parameters", m._parameters))
            sizes.append((m, "_parameters", len(m._parameters)))
        for where in _ENTRY_WORDS:
            entries.extend((m, where, k, v) for k, v in d[where].items())
    return ModuleStructure(entries, sizes) if entries or sizes else None


def _modules_in(roots: list[Any]) -> list[torch.nn.Module]:
    """The modules among `roots` and inside their plain containers and objects (not inside modules: their tree
    is walked by `module_structure`)."""
    found: dict[int, torch.nn.Module] = {}
    seen: set[int] = set()

    def visit(x: Any, depth: int) -> None:
        if id(x) in seen or depth > _MAX_DEPTH:
            return
        seen.add(id(x))
        if isinstance(x, torch.nn.Module):
            found.setdefault(id(x), x)
            return
        if isinstance(x, (torch.Tensor, type, types.ModuleType, types.FunctionType, str, bytes, int, float)):
            return
        if type(x) in (list, tuple):
            for v in x:
                visit(v, depth + 1)
        elif type(x) is dict:
            for v in x.values():
                visit(v, depth + 1)
        elif isinstance(x, types.MethodType):
            visit(x.__self__, depth)
        elif type(getattr(x, "__dict__", None)) is dict and type(x).__module__ not in ("builtins",):
            for v in vars(x).values():
                visit(v, depth + 1)

    for r in roots:
        visit(r, 0)
    return list(found.values())


def roots_of(fn: Any, instance: Any, arguments: list[Any]) -> list[Any]:
    """What a traced function reads objects through: its closure, the globals its code names (nested code
    too), the instance it is bound to, its arguments."""
    roots: list[Any] = [instance] if instance is not None else []
    roots.extend(arguments)
    fn = getattr(fn, "__func__", fn)
    if isinstance(fn, torch.nn.Module):
        roots.append(fn)
    if isinstance(fn, functools.partial):
        roots.extend(fn.args)
        roots.extend(fn.keywords.values())
        fn = fn.func
    code = getattr(fn, "__code__", None)
    if code is None:
        return roots
    roots.extend(read_through(fn, code))
    return roots
