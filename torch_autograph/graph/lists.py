"""Graph lists: Python lists of tensors that grow inside graph loops (SPEC decision 4).

TensorFlow raises InaccessibleTensorError when a Python list is appended to
inside a graph loop. Here such a list becomes a graph value: at run time it is
an ordinary Python list that the graph appends to, so `torch.stack(lst)` after
the loop sees every element::

    %acc: list[float32[3]] = new_list()
    %acc_1 = while(...)                    # body: %acc_2 = append(%acc, %y)
    %stack: float32[None, 3] = torch.stack(%acc_1)

Elements share a dtype; their shape is merged (dims that differ are None).
"""

from __future__ import annotations

from typing import Any

import torch

from . import tracer
from .graph import Op, OpKind, Value, ValueKind
from .shape_inference import Meta
from .tensor import KIND_CLASSES, GraphTensor


class GraphList(GraphTensor):
    """A list of tensors that exists only in the graph being traced.

    Supports `len`, indexing, `append`/`pop` (through AutoGraph's list
    operators or directly), iteration in converted `for` loops, and torch
    functions taking tensor lists (`torch.stack`, `torch.cat`).
    """

    __slots__ = ()

    def append(self, x: Any) -> "GraphList":
        return append(self, x)

    def pop(self, index: int = -1) -> Any:
        _, item = pop(self, index)
        return item

    def __len__(self) -> int:
        raise tracer.not_allowed(self, "len() of a graph list", "use ta's converted code (len(lst) there gives a "
                                 "run-time value) or torch.stack(lst).size(0)", error=TypeError)

    def __repr__(self) -> str:
        return f"GraphList({self._value.name!r}, element={_elem_words(self._value)})"


def _elem_words(v: Value) -> str:
    if v.dtype is None:
        return "<unknown>"
    return Value("_", v.dtype, v.shape, v.device).type_str()


def is_list_value(v: Any) -> bool:
    return isinstance(v, Value) and v.kind is ValueKind.LIST


def list_new(*items: Any) -> list:
    return list(items)


def list_append(lst: list, item: Any) -> list:
    lst.append(item)
    return lst


def list_pop(lst: list, index: int = -1) -> tuple[list, Any]:
    return lst, lst.pop(index)


def list_len(lst: list) -> int:
    return len(lst)


def merge_elements(a: Value | None, b: Any, what: str) -> tuple[torch.dtype | None, Any, Any]:
    """(dtype, shape, device) of list elements after adding `b` (a Value) to elements like `a`."""
    if a is None or a.dtype is None:
        return b.dtype, b.shape, b.device
    if b.dtype != a.dtype:
        raise TypeError(f"{what}: a graph list holds tensors of one dtype; it has {a.dtype} elements and got "
                        f"{b.dtype}")
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        shape = None
    else:
        shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape))
    return a.dtype, shape, a.device


def _list_meta(dtype: Any, shape: Any, device: Any) -> Meta:
    return Meta(dtype, shape, device, ValueKind.LIST)


def _record(op_fn: Any, name: str, args: tuple, meta: Any, stateful: bool) -> Any:
    return tracer.record_with_meta(Op(OpKind.FUNCTION, op_fn, name, stateful=stateful), args, {}, meta)


def new_list(items: list) -> GraphList:
    """A graph list holding `items` (tensors or graph tensors), created afresh at every call."""
    state = tracer.current()
    elem = None
    for it in items:
        v = state.to_value(it)
        if not isinstance(v, Value) or v.kind is not ValueKind.TENSOR:
            raise TypeError(f"only lists of tensors can become graph lists, got an element {it!r}")
        dtype, shape, device = merge_elements(elem, v, "list")
        elem = Value("_", dtype, shape, device)
    meta = _list_meta(*(merge_elements(elem, elem, "list") if elem is not None else (None, None, None)))
    return _as_list(_record(list_new, "list", tuple(items), meta, stateful=False))


def list_from_rows(t: torch.Tensor) -> list:
    return list(t.unbind(0))


def from_rows(t: GraphTensor) -> GraphList:
    """A graph list of the rows of `t` (its slices along dim 0), e.g. `sorted(t)` of a run-time length."""
    v = t._value
    return _as_list(_record(list_from_rows, "rows", (t,), _list_meta(v.dtype, v.shape[1:], v.device), stateful=False))


def _as_list(g: GraphTensor) -> GraphList:
    return GraphList(g._value, g._trace)


def append(lst: GraphList, item: Any) -> GraphList:
    """`lst.append(item)`; returns the list value after the append (the same run-time list)."""
    state = tracer.current()
    if isinstance(item, (int, float, bool)):
        item = torch.tensor(item)
    v = state.to_value(item)
    if not isinstance(v, Value) or v.kind is not ValueKind.TENSOR:
        item = torch.tensor(item)
        v = state.to_value(item)
    dtype, shape, device = merge_elements(lst._value, v, f"appending to {lst._value.name}")
    return _as_list(_record(list_append, "append", (lst, item), _list_meta(dtype, shape, device), stateful=True))


def pop(lst: GraphList, index: Any = -1) -> tuple[GraphList, GraphTensor]:
    """`lst.pop(index)`; returns (the list after the pop, the element)."""
    v = lst._value
    if v.dtype is None:
        raise tracer.not_allowed(lst, "popping from a graph list whose elements are unknown",
                                 "append to it before popping")
    meta = (_list_meta(v.dtype, v.shape, v.device), Meta(v.dtype, v.shape, v.device))
    out = _record(list_pop, "pop", (lst, index), meta, stateful=True)
    return _as_list(out[0]), out[1]


def length(lst: GraphList) -> GraphTensor:
    """`len(lst)` as a run-time Python int."""
    return _record(list_len, "len", (lst,), Meta(torch.int64, (), None, ValueKind.SCALAR), stateful=False)


def getitem(lst: GraphList, index: Any) -> Any:
    v = lst._value
    if v.dtype is None:
        raise tracer.not_allowed(lst, "indexing a graph list whose elements are unknown", "append to it first")
    if isinstance(index, slice):
        meta = _list_meta(v.dtype, v.shape, v.device)
        return _as_list(tracer.record_with_meta(Op(OpKind.OPERATOR, __import__("operator").getitem, "getitem"),
                                                (lst, index), {}, meta))
    return tracer.record_with_meta(Op(OpKind.OPERATOR, __import__("operator").getitem, "getitem"), (lst, index), {},
                                   Meta(v.dtype, v.shape, v.device))


GraphList.__getitem__ = getitem  # type: ignore[assignment]
KIND_CLASSES[ValueKind.LIST] = GraphList
