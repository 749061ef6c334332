"""Python builtins over graph values in converted code: `len`, `int`, `float`, `bool`, `abs`, `min`, `max`, `any`, `all`,
`sum`, `sorted`, `isinstance`, `type`, each giving what Python gives on the run-time values.
"""

from __future__ import annotations

import builtins
import functools
import operator
from typing import Any, Callable

import torch

from ..autograph import LazyRange
from ..graph import Op, OpKind
from ..subtraces import stage_cond
from ..tracing import (
    GraphList,
    GraphTensor,
    ScalarMeta,
    element_meta,
    is_symbolic,
    record_with_meta,
    traced,
    traits_of,
    user_location,
)
from .iteration import iteration, length, to_scalar

_NUMBER_TYPES = {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}


def _len(x: Any) -> Any:
    if isinstance(x, LazyRange):
        return iteration(x, None)[0]
    if isinstance(x, GraphTensor) and x.dim() == 0:
        raise TypeError(f"len() of a 0-d tensor: len requires a non-scalar tensor, got %{x._value.name} of shape "
                        f"() at {user_location()}")
    return length(x) if isinstance(x, (GraphTensor, GraphList)) else NotImplemented


def _int(x: Any, *rest: Any) -> Any:
    if rest:
        return NotImplemented
    if isinstance(x, GraphTensor):
        return to_scalar(x, int)
    if is_symbolic(x):
        if isinstance(x, torch.SymInt):
            return x
        return traced(torch.sym_int(x) if isinstance(x, torch.SymFloat) else torch.sym_ite(x, 1, 0))
    return NotImplemented


def _float(x: Any) -> Any:
    if isinstance(x, GraphTensor):
        return to_scalar(x, float)
    if is_symbolic(x):
        return x if isinstance(x, torch.SymFloat) else traced(torch.sym_float(x))
    return NotImplemented


def _bool(x: Any = False) -> Any:
    """bool() of a run-time number or one-element graph tensor: a bool known when the graph runs."""
    if isinstance(x, GraphTensor):
        return to_scalar(x, bool)
    if is_symbolic(x):
        return x if isinstance(x, torch.SymBool) else traced(x != 0)
    return NotImplemented


def _abs(x: Any) -> Any:
    return abs(x)


def _is_graph_tensor(v: Any) -> bool:
    return isinstance(v, GraphTensor)


def _reduce(builtin: Callable, tensor_fn: Callable) -> Callable:
    """min/max/any/all over graph values with Python's results (value for value)."""

    def handler(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return NotImplemented
        if len(args) == 1 and isinstance(args[0], GraphList):
            return _over_list(builtin, args[0])
        if len(args) == 1 and isinstance(args[0], GraphTensor):
            x = args[0]
            return tensor_fn(x) if x.dim() == 1 else NotImplemented
        items = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
        if builtin in (builtins.any, builtins.all) and len(args) == 1 and items:
            return _any_all(builtin, items)
        if builtin not in (builtins.min, builtins.max) or not items:
            return NotImplemented
        if not any(_is_graph_tensor(v) for v in items):
            pick_number = torch.sym_min if builtin is builtins.min else torch.sym_max
            return traced(functools.reduce(pick_number, items))  # run-time Python numbers: Python's min/max
        # Python gives one of the arguments: the first extreme one (a later one wins only if strictly
        # smaller, or larger). A graph `if` picks it when the graph runs, so autograd records only the
        # argument picked, as eagerly (the other one's computation is not kept for backward).
        better = operator.lt if builtin is builtins.min else operator.gt
        out = items[0]
        for it in items[1:]:
            out = stage_cond(better(it, out), lambda it=it: it, lambda out=out: out,
                                   names=(f"<{builtin.__name__}>",), origin=user_location())
        return out

    return handler


def _over_list(builtin: Callable, lst: GraphList, *rest: Any) -> Any:
    """`builtin(lst, *rest)` on a graph list: Python's builtin on the run-time list of tensors."""
    v = lst._value
    if v.dtype is None:
        return NotImplemented
    meta = ScalarMeta(torch.bool) if builtin in (builtins.any, builtins.all) else element_meta(v)
    op = Op(OpKind.FUNCTION, builtin, builtin.__name__, traits=traits_of(builtin))
    return record_with_meta(op, (lst, *rest), {}, meta)


def _any_all(builtin: Callable, items: list) -> Any:
    """any/all of a Python list holding graph values: one logical reduction of their truth values."""
    if not any(_is_graph_tensor(v) or is_symbolic(v) for v in items):
        return NotImplemented
    flags = [v.reshape(()).bool() if _is_graph_tensor(v) else torch.tensor(v).bool() if is_symbolic(v)
             else torch.tensor(bool(v)) for v in items]
    stacked = torch.stack(flags)
    return stacked.any() if builtin is builtins.any else stacked.all()


def _sum(x: Any, start: Any = 0) -> Any:
    if isinstance(x, GraphList):
        return _over_list(builtins.sum, x, start)
    if isinstance(x, GraphTensor):
        return x.sum(0) + start if x.dim() >= 1 else NotImplemented
    return NotImplemented


def _sorted(x: Any, *, key: Any = None, reverse: bool = False) -> Any:
    if key is not None or not isinstance(x, GraphTensor) or x.dim() != 1:
        return NotImplemented
    # Python gives a list of 0-d tensors; so do we (a graph list when the length is only known at run time).
    values = torch.sort(x, descending=reverse, stable=True).values
    if type(x.size(0)) is int:
        return list(values.unbind(0))
    from ..tracing import lists

    return lists.from_rows(values)


def _isinstance(obj: Any, cls: Any) -> bool:
    """isinstance of what the value is when the graph runs: a run-time number is an int/float/bool, a graph
    list a list (a graph tensor is a torch.Tensor already)."""
    classes = cls if isinstance(cls, tuple) else (cls,)
    if is_symbolic(obj):
        kind = next(k for t, k in _NUMBER_TYPES.items() if isinstance(obj, t))
        return any(isinstance(c, type) and issubclass(kind, c) for c in classes)
    if isinstance(obj, GraphList):
        return any(isinstance(c, type) and issubclass(list, c) for c in classes)
    return NotImplemented


def _type(obj: Any, *rest: Any) -> Any:
    """type() of what the value is when the graph runs: a tensor, a list, an int/float/bool."""
    if rest:
        return NotImplemented
    if is_symbolic(obj):
        return next(k for t, k in _NUMBER_TYPES.items() if isinstance(obj, t))
    if isinstance(obj, GraphList):
        return list
    if isinstance(obj, GraphTensor):
        return torch.Tensor  # graph values stand for plain tensors (a captured Parameter is read as itself)
    return NotImplemented


BUILTINS: dict[Any, Callable] = {
    builtins.len: _len, builtins.int: _int, builtins.float: _float, builtins.bool: _bool, builtins.abs: _abs,
    builtins.min: _reduce(builtins.min, lambda x: x.min()), builtins.max: _reduce(builtins.max, lambda x: x.max()),
    builtins.any: _reduce(builtins.any, lambda x: x.bool().any()),
    builtins.all: _reduce(builtins.all, lambda x: x.bool().all()),
    builtins.sum: _sum, builtins.sorted: _sorted, builtins.isinstance: _isinstance, builtins.type: _type,
}


def membership(element: Any, container: Any, loc: Any = None) -> Any:
    """`element in container` in converted code with a graph value in it: what Python's `__contains__` gives on
    the run-time values, as a graph bool. A tensor holds `element` where `(container == element).any()`
    (torch's `Tensor.__contains__`); a list or tuple where an item is `element` or equals it (`bool(item ==
    element)`, as Python does, so a comparison of more than one element is an error here as there)."""
    where = f" at {loc}" if loc else ""
    if isinstance(container, torch.Tensor):
        if not isinstance(element, (torch.Tensor, int, float, bool, torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element)}{where}")
        return (container == element).any()
    if type(container) not in (list, tuple):
        return element in container  # a dict or set: keys are hashed (a tensor's hash is its identity)
    answers = []
    for item in container:
        if item is element:
            return True if not answers else torch.stack(answers + [torch.ones((), dtype=torch.bool)]).any()
        eq = item == element
        if isinstance(eq, torch.Tensor):
            if type(eq.numel()) is not int or eq.numel() != 1:
                raise RuntimeError(f"`in` compares {element!r} with each item by `==`, and the comparison with "
                                   f"an item of shape {tuple(item.shape) if hasattr(item, 'shape') else '?'} has "
                                   f"more than one value (Boolean value of Tensor with more than one value is "
                                   f"ambiguous){where}. Fix: compare explicitly, e.g. `(item == x).all()`")
            answers.append(eq.reshape(()).to(torch.bool))
        elif eq:
            return True
    return torch.stack(answers).any() if answers else False
