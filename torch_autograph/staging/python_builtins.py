"""Python builtins over graph values in converted code: `len`, `int`, `float`, `abs`, `min`, `max`, `any`, `all`,
`sum`, `sorted`, `isinstance`, each giving what Python gives on the run-time values; and torch calls whose
argument parser would reject a run-time number.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Callable

import torch

from ..autograph.operators.py_builtins import LazyRange
from ..graph import Op, OpKind, ValueKind
from ..tracing import lists
from ..tracing.context import current
from ..tracing.lists import GraphList
from ..tracing.locations import user_location
from ..tracing.messages import holds_none, unknown_dim_error
from ..tracing.shape_inference import Meta
from ..tracing.tensor import GraphTensor, call_python, record, record_with_meta
from .iteration import is_scalar, iteration, length, to_scalar

def _len(x: Any) -> Any:
    if isinstance(x, LazyRange):
        return iteration(x, None)[0]
    if isinstance(x, GraphTensor) and x._value.kind is ValueKind.TENSOR and x.shape is not None and not x.shape:
        raise TypeError(f"len() of a 0-d tensor: len requires a non-scalar tensor, got %{x._value.name} of shape "
                        f"() at {user_location()}")
    return length(x) if isinstance(x, GraphTensor) else NotImplemented


def _int(x: Any, *rest: Any) -> Any:
    if rest or not isinstance(x, GraphTensor):
        return NotImplemented
    return x if x._value.kind is ValueKind.SCALAR and x.dtype == torch.int64 else to_scalar(x, int)


def _float(x: Any) -> Any:
    if not isinstance(x, GraphTensor):
        return NotImplemented
    return to_scalar(x, float)


def _abs(x: Any) -> Any:
    return abs(x)


def _reduce(builtin: Callable, tensor_fn: Callable) -> Callable:
    """min/max/any/all over graph values with Python's results (value for value)."""

    def handler(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return NotImplemented
        if len(args) == 1 and isinstance(args[0], GraphList):
            return _over_list(builtin, args[0])
        if len(args) == 1 and isinstance(args[0], GraphTensor):
            x = args[0]
            if x.shape is not None and len(x.shape) == 1:
                return tensor_fn(x)
            return NotImplemented
        items = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
        if builtin in (builtins.any, builtins.all) and len(args) == 1 and items:
            return _any_all(builtin, items)
        if builtin not in (builtins.min, builtins.max) or not items:
            return NotImplemented
        if not any(isinstance(v, GraphTensor) and v._value.kind is ValueKind.TENSOR for v in items):
            # Run-time Python numbers: Python's min/max. With ints and floats among them the result
            # is either, which one graph value cannot be: all become floats (equal values).
            if _has_number(items, float) and _has_number(items, int):
                items = [to_scalar(v, float) if isinstance(v, GraphTensor) else float(v) for v in items]
            return call_python(builtin, *items)
        # Python keeps the first extreme element: a later one wins only if strictly smaller (larger),
        # so on a tie the gradient goes to the first one too.
        better = operator.lt if builtin is builtins.min else operator.gt
        out = items[0]
        for it in items[1:]:
            out, it = _as_tensors(out, it)
            out = torch.where(better(it, out), it, out)
        return out

    return handler


def _has_number(items: list, kind: type) -> bool:
    """Whether `items` holds a Python number of type `kind` (an int or a float), now or at run time."""
    dtype = {int: torch.int64, float: torch.float64}[kind]
    return any(type(v) is kind or (is_scalar(v) and v._value.dtype == dtype) for v in items)


def _over_list(builtin: Callable, lst: GraphList, *rest: Any) -> Any:
    """`builtin(lst, *rest)` on a graph list: Python's builtin on the run-time list of tensors."""
    v = lst._value
    if v.dtype is None:
        return NotImplemented
    meta = Meta(torch.bool, (), None, ValueKind.SCALAR) if builtin in (builtins.any, builtins.all) else \
        Meta(v.dtype, v.shape, v.device)
    return record_with_meta(Op(OpKind.FUNCTION, builtin, builtin.__name__), (lst, *rest), {}, meta)


def _any_all(builtin: Callable, items: list) -> Any:
    """any/all of a Python list holding graph values: one logical reduction of their truth values."""
    if not any(isinstance(v, GraphTensor) for v in items):
        return NotImplemented
    flags = [(v.reshape(()) if v._value.kind is ValueKind.TENSOR else torch.tensor(v)).bool()
             if isinstance(v, GraphTensor) else torch.tensor(bool(v)) for v in items]
    stacked = torch.stack(flags)
    return stacked.any() if builtin is builtins.any else stacked.all()


def _as_tensors(a: Any, b: Any) -> tuple[Any, Any]:
    """Both operands as tensors, Python numbers taking the dtype Python arithmetic would give."""
    def tensor_like(v: Any, other: Any) -> Any:
        if isinstance(v, GraphTensor) and v._value.kind is ValueKind.TENSOR:
            return v
        dtype = torch.result_type(other, v if not isinstance(v, GraphTensor) else 0)
        return torch.tensor(v, dtype=dtype, device=other.device)

    if not (isinstance(a, GraphTensor) and a._value.kind is ValueKind.TENSOR):
        return tensor_like(a, b), b
    return a, tensor_like(b, a)


def _sum(x: Any, start: Any = 0) -> Any:
    if isinstance(x, GraphList):
        return _over_list(builtins.sum, x, start)
    if isinstance(x, GraphTensor):
        return x.sum(0) + start if (x.shape is not None and len(x.shape) >= 1) else NotImplemented
    return NotImplemented


def _sorted(x: Any, *, key: Any = None, reverse: bool = False) -> Any:
    if key is not None or not isinstance(x, GraphTensor) or x.shape is None or len(x.shape) != 1:
        return NotImplemented
    # Python gives a list of 0-d tensors; so do we (a graph list when the length is only known at run time).
    values = torch.sort(x, descending=reverse, stable=True).values
    if x.shape[0] is not None:
        return list(values.unbind(0))
    return lists.from_rows(values)


def _isinstance(obj: Any, cls: Any) -> bool:
    if isinstance(obj, GraphTensor):
        classes = cls if isinstance(cls, tuple) else (cls,)
        return any(isinstance(c, type) and (issubclass(torch.Tensor, c) or issubclass(GraphTensor, c))
                   for c in classes)
    return NotImplemented


BUILTINS: dict[Any, Callable] = {
    builtins.len: _len, builtins.int: _int, builtins.float: _float, builtins.abs: _abs,
    builtins.min: _reduce(builtins.min, lambda x: x.min()), builtins.max: _reduce(builtins.max, lambda x: x.max()),
    builtins.any: _reduce(builtins.any, lambda x: x.bool().any()),
    builtins.all: _reduce(builtins.all, lambda x: x.bool().all()),
    builtins.sum: _sum, builtins.sorted: _sorted, builtins.isinstance: _isinstance,
}


def call_torch_builtin(f: Any, args: tuple, kwargs: dict) -> Any:
    """Call a torch C function from converted code while tracing, staging what its parser would reject.

    torch's argument parser rejects a run-time Python number (`n = x.size(0)`
    of a dim unknown in the trace) as the first of varargs sizes
    (`torch.zeros(n, 2)`, `p.expand(n, 3)`) before any `__torch_function__`
    runs; such calls are recorded here directly. A TypeError from a torch call
    given None among its sizes gets an explanation: the None is most likely a
    dim of `x.shape` that is unknown in this trace.
    """
    if current() is None:
        return NotImplemented
    self_ = getattr(f, "__self__", None)
    if isinstance(self_, torch.Tensor):  # a method of a real tensor (a parameter, a closure tensor)
        target, target_args = getattr(torch.Tensor, f.__name__, None), (self_,) + args
    elif (getattr(f, "__module__", None) or "").startswith("torch"):
        target, target_args = f, args
    else:
        return NotImplemented
    if target is not None and (_holds_run_time_number(args) or _holds_run_time_number(kwargs.values())):
        return record(target, target_args, kwargs)
    try:
        return f(*args, **kwargs)
    except TypeError as e:
        if not holds_none(args, kwargs):
            raise
        raise unknown_dim_error(e, f.__name__, args, kwargs) from None


def _holds_run_time_number(items: Any) -> bool:
    for a in items:
        if type(a) in (tuple, list):
            if any(is_scalar(b) for b in a):
                return True
        elif is_scalar(a):
            return True
    return False
