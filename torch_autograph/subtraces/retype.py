"""Re-typing a traced loop body: give some of its inputs new types without running the user's Python again.

A graph loop learns the types of some loop variables only by tracing the body
once: a Python number the body turns into a tensor, a graph list whose element
type was unknown, a variable first assigned inside the loop. Tracing again
would run the body's Python side effects again (a loop body is
traced once). Instead the recorded sub-graphs are re-typed in place: every
node that reads a re-typed value has its output metadata inferred again::

    body(s: int, v: float32[])    { %add: float32[] = %s + %v ... }
    body(s: float32[], v: float32[]) { %add: float32[] = %s + %v ... }   # after retype

Only nodes whose recorded operation is the same whatever the input types
(Python operators, graph-list appends, `cond` nodes made of those, run-time
checks) can be re-typed, plus augmented assignments: `s += v` rebinds a
Python number but updates a tensor in place, and becomes `s.add_(v)` as a
trace would record it. A conversion of a number to a tensor that the tracer
inserted (`Op.converts_number`: a tensor `if` merging it, an inner loop
starting from it) is dropped once its input is a tensor of its type, as a
trace records none; an inner loop whose initial values changed only that way
is kept as is. For anything else `retype` gives up and the caller traces the
body again.
"""

from __future__ import annotations

import operator
import re
from dataclasses import replace
from typing import Any

import torch

from ..graph import (
    CheckOp,
    CondOp,
    Effect,
    Expression,
    Graph,
    Node,
    OpKind,
    Value,
    ValueKind,
    WhileOp,
    iter_values,
    list_ops,
    substitute,
)
from ..tracing import ListMeta, ScalarMeta, TensorMeta, current, lists, same_dim

# Python operators whose recorded node is the same for run-time numbers and tensors.
_POLYMORPHIC = frozenset({
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow,
    operator.neg, operator.pos, operator.abs, abs, operator.lt, operator.le, operator.gt, operator.ge,
    operator.eq, operator.ne,
})


class _CannotRetype(Exception):
    """A node reading a re-typed value records different operations for different input types."""


def retype(graphs: tuple[Graph, ...], mapping: dict[int, Value]) -> dict[int, Value] | None:
    """Substitute `mapping` (id of an old Value -> its re-typed Value) in `graphs` and re-infer what depends on it.

    Returns:
        The mapping extended with every node output whose type changed, or
        None when some dependent node cannot be re-typed (the graphs are then
        partly rewritten and must be discarded).
    """
    mapping = dict(mapping)
    try:
        for g in graphs:
            _retype_graph(g, mapping)
    except _CannotRetype:
        return None
    return mapping


def _reads_changed(node: Node, mapping: dict[int, Value]) -> bool:
    if any(id(v) in mapping for v in node.input_values()):
        return True
    return any(id(v) in mapping for sub in node.subgraphs for v in sub.inputs)


def _retype_graph(g: Graph, mapping: dict[int, Value]) -> None:
    g.inputs = [mapping.get(id(v), v) for v in g.inputs]
    kept = []
    updated = False  # whether a node so far may update a tensor in place
    for node in g.nodes:
        if not _reads_changed(node, mapping):
            kept.append(node)
        elif updated and isinstance(node.op.target, Expression):
            # Numbers' arithmetic is recorded where its result is first used, not where the user's code
            # computed it: on a tensor that an earlier node may update in place, only a trace records the
            # read in program order.
            raise _CannotRetype
        elif node.op.converts_number:
            _drop_conversion(node, mapping)
        else:
            _retype_node(node, mapping)
            kept.append(node)
        updated = updated or node.stateful
    g.nodes = kept
    g.outputs = substitute(g.outputs, mapping)


def _drop_conversion(node: Node, mapping: dict[int, Value]) -> None:
    """A number the tracer converted to a tensor is now a tensor of that type: a trace converts nothing."""
    src, (out,) = substitute(node.args[0], mapping), node.outputs
    if not (_is_tensor(src) and src.dtype == out.dtype and src.device == out.device):
        # Another type than the other branch or the loop variable: a trace of the re-typed body
        # decides what to record (or reports the mismatch).
        raise _CannotRetype
    mapping[id(out)] = src


def _retype_node(node: Node, mapping: dict[int, Value]) -> None:
    op = node.op
    if op.kind is OpKind.CONTROL and isinstance(op.target, WhileOp):
        # An inner loop started from a number converted to a tensor, now the tensor itself.
        if not _only_initial_values_changed(node, mapping):
            raise _CannotRetype
        node.args = substitute(node.args, mapping)
        return
    node.args, node.kwargs = substitute(node.args, mapping), substitute(node.kwargs, mapping)
    if op.kind is OpKind.OPERATOR and op.inplace is not None and _is_tensor(node.args[0]):
        # `n += t` rebound a Python number; on a tensor the same statement updates it in place,
        # which aliases (a list it was appended to) see: record what a trace of a tensor records.
        node.op = op.inplace
        metas = [_infer(getattr(torch.Tensor, op.inplace.target), node.args, node.kwargs)]
    elif op.kind is OpKind.OPERATOR and op.target in _POLYMORPHIC and not op.stateful:
        metas = [_infer(op.target, node.args, node.kwargs)]
    elif op.kind is OpKind.FUNCTION and op.target is list_ops.list_append:
        lst, item = node.args
        if not (lists.is_list_value(lst) and isinstance(item, Value) and item.kind is ValueKind.TENSOR):
            raise _CannotRetype
        metas = [_merged_list(lst if lst.dtype is not None else None, item)]
    elif op.kind is OpKind.FUNCTION and op.target is list_ops.list_len:
        return
    elif op.kind is OpKind.CONTROL and isinstance(op.target, CheckOp):
        return
    elif op.kind is OpKind.CONTROL and isinstance(op.target, CondOp):
        metas = _retype_cond(node, mapping)
    elif op.kind is OpKind.FUNCTION and isinstance(op.target, Expression) and _ring_expression(op.target):
        metas = [_infer(op.target, node.args, node.kwargs)]
    else:
        raise _CannotRetype
    if len(metas) != len(node.outputs):
        raise _CannotRetype
    new_outputs = []
    for old, meta in zip(node.outputs, metas):
        new = _value_like(old, meta)
        if new is not old:
            mapping[id(old)] = new
        new_outputs.append(new)
    node.outputs = tuple(new_outputs)
    node.pattern = substitute(node.pattern, mapping)


def _ring_expression(expr: Expression) -> bool:
    """Whether `expr` uses only `+`, `-`, `*` and integer constants.

    Its symbolic simplification (`s + s` -> `2*s`) then holds for tensors of any dtype too; one with
    `//`, `%` or a function may rely on its arguments being integers, and the body is traced again.
    """
    return re.fullmatch(r"[\s\d()+\-*_a]*", expr.text) is not None and "**" not in expr.text


def _value_like(old: Value, meta: Any) -> Value:
    """`old` if `meta` describes the same type, else a new Value of `meta`'s type with `old`'s name."""
    symbols = current().trace.symbols
    if isinstance(meta, TensorMeta):
        shape = tuple(meta.example.shape)
        if old.kind is ValueKind.TENSOR and (old.dtype, old.device) == (meta.dtype, meta.device) and \
                len(old.shape) == len(shape) and all(same_dim(a, b) for a, b in zip(old.shape, shape)):
            return old
        new = Value(old.name, meta.dtype, shape, meta.device, ValueKind.TENSOR, meta.example)
        for d, size in enumerate(shape):
            if isinstance(size, torch.SymInt):
                symbols.output_dim(size, new, d)
        return new
    if isinstance(meta, ListMeta):
        if old.kind is ValueKind.LIST and (old.dtype, old.shape, old.device) == (meta.dtype, meta.shape, meta.device):
            return old
        return Value(old.name, meta.dtype, meta.shape, meta.device, ValueKind.LIST)
    if isinstance(meta, ScalarMeta):
        if old.kind is ValueKind.SCALAR and old.dtype == meta.dtype:
            return old
        new = Value(old.name, meta.dtype, (), None, ValueKind.SCALAR)
        symbols.from_value(new)
        return new
    raise _CannotRetype


def _only_initial_values_changed(node: Node, mapping: dict[int, Value]) -> bool:
    """Whether a `while` node's changed inputs are initial values (args[0]), each replaced by one of the same type.

    Its sub-graphs then record what a trace with the new values would record.
    """
    if any(id(v) in mapping for sub in node.subgraphs for v in sub.inputs):
        return False
    if any(id(v) in mapping for v in iter_values((node.args[1:], node.kwargs))):
        return False
    return all(_type_of(mapping.get(id(v), v)) == _type_of(v) for v in iter_values(node.args[0]))


def _type_of(v: Value) -> tuple:
    return v.kind, v.dtype, v.shape, v.device


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Value) and x.kind is ValueKind.TENSOR


def _merged_list(lst: Value | None, item: Value) -> ListMeta:
    """The type of graph list `lst` (None: element type unknown) holding `item` too, as `list_append` merges it."""
    try:
        dtype, shape, device = lists.merge_elements(lst, item, "a graph list")
    except TypeError:
        # Elements of two types (`out.append(n)` before `n` became a float tensor): a trace of the
        # re-typed body decides, as the user's code would (it reports the error if there is one).
        raise _CannotRetype from None
    return ListMeta(dtype, shape, device)


def _infer(fn: Any, args: tuple, kwargs: dict) -> Any:
    try:
        with torch._C.DisableTorchFunction():  # run on examples, not recorded into the trace
            meta = current().trace.engine.infer(fn, args, kwargs)
    except Exception:
        raise _CannotRetype from None
    if not isinstance(meta, (TensorMeta, ScalarMeta)):
        raise _CannotRetype
    return meta


def _retype_cond(node: Node, mapping: dict[int, Value]) -> list[Any]:
    """Re-type both branches, then merge their outputs as `cond` did when it was traced."""
    for sub in node.subgraphs:
        _retype_graph(sub, mapping)
    true_g, false_g = node.subgraphs
    metas = []
    for old, a, b in zip(node.outputs, true_g.outputs, false_g.outputs):
        if not (isinstance(a, Value) and isinstance(b, Value)) or a.kind is not b.kind:
            raise _CannotRetype
        if a.dtype != b.dtype and a.kind is not ValueKind.LIST or a.device != b.device:
            raise _CannotRetype
        if a.kind is ValueKind.LIST:
            if b.dtype is None:
                metas.append(ListMeta(a.dtype, a.shape, a.device))
                continue
            metas.append(_merged_list(a if a.dtype is not None else None, b))
            continue
        if a.kind is ValueKind.SCALAR:
            metas.append(ScalarMeta(a.dtype))
            continue
        if len(a.shape) != len(b.shape):
            raise _CannotRetype
        shape = tuple(x if same_dim(x, y) else None for x, y in zip(a.shape, b.shape))
        if old.kind is ValueKind.TENSOR and all(same_dim(x, y) for x, y in zip(old.shape, shape) if y is not None) \
                and len(old.shape) == len(shape) and (old.dtype, old.device) == (a.dtype, a.device):
            metas.append(TensorMeta(old.example, old.device))  # unchanged (its open dims stay its own)
            continue
        example = current().trace.engine.example(shape, a.dtype, a.device)
        metas.append(TensorMeta(example, a.device))
    if len(metas) != len(node.outputs):
        raise _CannotRetype
    if not node.op.stateful and any(n.stateful for sub in node.subgraphs for n in sub.nodes):
        node.op = replace(node.op, effects=Effect.UNKNOWN)  # a branch now updates in place
    return metas
