"""Writing the planned contents into the caller's Python objects (python_state.py plans them).

An item plan: ("out", i) the i-th effect output; ("arg", path) the call's argument object at path; ("obj", x)
x itself; ("list", i) the items of the i-th output (a graph list); ("num", int/float/bool, i) the Python number
of the i-th output; ("item", key, plan) a dict's or object's entry; ("new", kind, keys, plans) a new
list/tuple/dict of planned items; ("copy", object, keys, plans) a shallow copy of an object the trace made, its
entries planned.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

# What every nn.Module's __dict__ holds for torch (`_parameters`, `_modules`, the hook dicts...): not the user's
# attributes. `training` is, but a mode, guarded on its own (and set to Python values only).
MODULE_OWN = frozenset(vars(torch.nn.Module()))


def contents_of(obj: Any, kind: str) -> Any:
    if kind == "list":
        return list(obj)
    if kind == "dict":
        return list(obj.items())
    if kind == "names":
        return obj.contents()
    if kind == "module":
        return [(k, v) for k, v in vars(obj).items() if k not in MODULE_OWN]
    return list(vars(obj).items())


def assign(obj: Any, kind: str, contents: list) -> None:
    if kind == "list":
        obj[:] = contents
    elif kind == "dict":
        obj.clear()
        obj.update(contents)
    elif kind == "names":
        obj.assign(contents)
    else:
        d = dict(contents_of(obj, kind))  # (a module: its own attributes only, not torch's)
        keep = dict(contents)
        for k in [k for k in d if k not in keep]:
            delattr(obj, k)
        for k, v in contents:
            if k not in d or d[k] is not v:
                setattr(obj, k, v)


def update_entries(obj: Any, kind: str, items: list, removed: tuple) -> None:
    """Set the entries `items` and remove the keys `removed` of a dict or an object, leaving the others."""
    if kind == "dict":
        for k in removed:
            obj.pop(k, None)
        obj.update(items)
        return
    if kind == "names":  # (each name is listed, a deleted one as missing)
        obj.assign(items)
        return
    d = vars(obj)
    for k in removed:
        if k in d:
            delattr(obj, k)
    for k, v in items:
        if k not in d or d[k] is not v:
            setattr(obj, k, v)


def at_path(bound: dict, path: tuple) -> Any:
    obj = bound[path[0]]
    for k in path[1:]:
        obj = obj[k]
    return obj


def resolve(plan: tuple, outs: tuple, bound: dict | None) -> Any:
    tag = plan[0]
    if tag == "out":
        return outs[plan[1]]
    if tag == "obj":
        return plan[1]
    if tag == "arg":
        return at_path(bound, plan[1])
    if tag == "list":
        return list(outs[plan[1]])
    if tag == "num":
        return plan[1](outs[plan[2]].item())
    if tag == "item":
        return (plan[1], resolve(plan[2], outs, bound))
    if tag == "copy":
        _, template, keys, items = plan
        new = copy.copy(template)
        vars(new).update(zip(keys, (resolve(p, outs, bound) for p in items)))
        return new
    _, kind, keys, items = plan
    values = [resolve(p, outs, bound) for p in items]
    if kind is dict:
        return dict(zip(keys, values))
    return kind(values)
