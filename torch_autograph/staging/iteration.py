"""How a converted `for` loop iterates over graph values: the number of iterations and an element getter.

`for x in t`, `for i in range(n)`, `enumerate(...)` and `zip(...)` over graph
values become a graph `while` loop over an index `k`; `iteration` says how
many times it runs (an int, or a run-time number) and how to read the k-th
element.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import torch

from ..autograph import LazyEnumerate, LazyIterable, LazyRange, LazyZip
from ..graph import Op, OpKind, SourceLocation
from ..tracing import GraphList, GraphTensor, ScalarMeta, is_symbolic, lists, record_with_meta, traced

_DTYPES = {int: torch.int64, float: torch.float64, bool: torch.bool}


def to_scalar(x: GraphTensor, kind: type = int) -> Any:
    """A run-time Python number read from a one-element graph tensor (`int(t)` when the graph runs)."""
    return record_with_meta(Op(OpKind.FUNCTION, kind, "item", pure=True), (x,), {}, ScalarMeta(_DTYPES[kind]))


def is_scalar(x: Any) -> bool:
    """Whether `x` is a run-time Python number (a number the graph computes)."""
    return is_symbolic(x)


def length(x: Any) -> Any:
    """The first dim of a graph tensor (an int, or a run-time number), or the length of a graph list."""
    if isinstance(x, GraphList):
        return lists.length(x)
    if isinstance(x, GraphTensor):
        if x.dim() == 0:
            raise TypeError(f"iteration over a 0-d tensor {x!r}")
        return x.size(0)
    return len(x)


def _range_len(start: Any, stop: Any, step: Any) -> int:
    return len(range(start, stop, step))


def range_length(start: Any, stop: Any, step: Any) -> Any:
    """`len(range(start, stop, step))` of numbers some of which are known only when the graph runs."""
    if not any(is_symbolic(v) for v in (start, stop, step)):
        return _range_len(start, stop, step)
    if type(step) is int and step > 0:
        return traced(torch.sym_max(0, (stop - start + step - 1) // step))
    if type(step) is int and step < 0:
        return traced(torch.sym_max(0, (start - stop - step - 1) // -step))
    return record_with_meta(Op(OpKind.FUNCTION, _range_len, "range_len", pure=True), (start, stop, step), {},
                            ScalarMeta(torch.int64))


def iteration(iterable: Any, origin: SourceLocation | None) -> tuple[Any, Callable[[Any], Any]]:
    """(number of iterations, element getter) for a staged iterable."""
    if isinstance(iterable, LazyRange):
        start, stop, step = (to_scalar(v) if isinstance(v, GraphTensor) else v
                             for v in (iterable.start, iterable.stop, iterable.step))
        n = range_length(start, stop, step)
        plain = type(start) is int and type(step) is int and (start, step) == (0, 1)
        return n, (lambda k: k) if plain else (lambda k: start + k * step)
    if isinstance(iterable, LazyEnumerate):
        n, get = iteration(iterable.iterable, origin)
        start = iterable.start
        return n, lambda k: (k + start if not (isinstance(start, int) and start == 0) else k, get(k))
    if isinstance(iterable, LazyZip):
        parts = [iteration(it, origin) if isinstance(it, (GraphTensor, GraphList, LazyIterable))
                 else python_sequence(it, origin, "zip") for it in iterable.iterables]
        n = parts[0][0]
        for m, _ in parts[1:]:
            n = traced(torch.sym_min(n, m)) if is_symbolic(n) or is_symbolic(m) else min(n, m)
        return n, lambda k: tuple(get(k) for _, get in parts)
    if isinstance(iterable, (GraphTensor, GraphList)):
        return length(iterable), lambda k: iterable[k]
    raise TypeError(f"cannot iterate over {iterable!r} in a graph loop{' at ' + str(origin) if origin else ''}")


def python_sequence(it: Any, origin: SourceLocation | None, what: str) -> tuple[int, Callable[[Any], Any]]:
    """(length, element getter) of a Python iterable read at a run-time index (zipped with a graph
    iterable, or indexed by a run-time value: `what` says which, for the message)."""
    items = list(it)
    if any(isinstance(v, torch.Tensor) for v in items) and all(
            isinstance(v, torch.Tensor) or type(v) in (bool, int, float) or is_scalar(v) for v in items):
        graph_list = lists.new_list(items)
        return len(items), lambda k: lists.getitem(graph_list, k)
    if all(type(v) in (bool, int, float) for v in items) and len({type(v) for v in items}) <= 1:
        constants = tuple(items)
        dtype = _DTYPES[type(items[0])] if items else torch.int64
        return len(items), lambda k: record_with_meta(Op(OpKind.OPERATOR, operator.getitem, "getitem", pure=True),
                                                      (constants, k), {}, ScalarMeta(dtype))
    where = f" at {origin}" if origin else ""
    action = (f"cannot zip {type(it).__name__} {it!r} with a graph iterable" if what == "zip" else
              f"cannot read {type(it).__name__} {it!r} at an index known only when the graph runs")
    raise TypeError(f"{action}{where}: only tensors or Python numbers of one type can be read at a run-time index. "
                    f"Make it a tensor.")
