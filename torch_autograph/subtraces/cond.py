"""Graph `cond` nodes and run-time checks: `cond` traces both branches of a tensor `if` into sub-graphs.

`ta.cond(pred, true_fn, false_fn)` with a graph-tensor predicate traces both
branches into sub-graphs and records one `cond` node; the torch backend runs
it as a Python `if` on the evaluated predicate, so autograd records exactly
the path taken. With a Python predicate it behaves exactly like Python.

Printed form::

    %y: float32[3] = cond(%gt)  # demo.py:5
        graph true() { %mul = %x * 2 ... return %mul }
        graph false() { ... }

Python numbers stay Python numbers: a counter `i = 0` carried through a branch
is a run-time Python int (a SCALAR value), not a tensor.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from .. import errors, nest
from ..graph import (
    CheckOp,
    CondOp,
    Effect,
    Node,
    Op,
    OpKind,
    SourceLocation,
    Value,
    ValueKind,
    control_op,
    eliminate_dead_code,
    unique_values,
)
from ..tracing import NeedsSizeError, Scope, current, is_graph_value, lists, same_dim, traced, user_location
from .branches import (
    SCALAR_DTYPES,
    UNSET,
    Branch,
    Leaf,
    as_tensor_in,
    check_predicate,
    describe,
    leaf_kind,
    number_fits,
    quoted,
    structure_repr,
    to_value,
    type_words,
    value_type,
    where,
)
from .loop_vars import SharedSizes
from .raises import run_or_raise


def _unset_in(branch: Branch, like: Value) -> Any:
    """A stand-in of `like`'s type for a value that will never be read."""
    if like.kind is ValueKind.SCALAR:
        return {torch.bool: False, torch.float64: 0.0}.get(like.dtype, 0)
    if like.kind is ValueKind.LIST:
        return branch.record(lambda: branch.state.to_value(lists.empty_like(like)))
    # A size made from the inputs' sizes is readable everywhere; another size known only when the graph runs
    # may come from the other branch, which this one cannot read: 0.
    shape = tuple(0 if lists.input_size(d) is None else d for d in like.shape)
    return branch.record(lambda: branch.state.to_value(torch.zeros(shape, dtype=like.dtype, device=like.device)))


def merged_value(outer: Scope, name: str, a: Value, b: Value, pairs: dict | None = None) -> tuple[Value, bool]:
    """The value merging `a` and `b` (one from each branch): a dim that differs is a fresh size symbol, read
    from the merged value when the graph runs. Returns it and whether it requires grad.

    `pairs` maps (size in the main branch, size in the else branch) to the symbol already given to a dim of
    another output of the same `if` with those sizes: whichever branch runs, the two dims are equal (a KV
    cache and its attention mask grown in one branch), and sharing the symbol says so.
    """
    requires_grad = bool(getattr(a.example, "requires_grad", False) or getattr(b.example, "requires_grad", False))
    if a.kind is not ValueKind.TENSOR:
        return Value(outer.fresh_name(name), a.dtype, (), a.device, a.kind), False
    pairs = {} if pairs is None else pairs
    keys = [(SharedSizes.key(x), SharedSizes.key(y)) for x, y in zip(a.shape, b.shape)]
    shape = []
    for x, y, k in zip(a.shape, b.shape, keys):
        if not same_dim(x, y) and k not in pairs:
            pairs[k] = outer.trace.symbols.either_size(x, y)
        shape.append(x if same_dim(x, y) else pairs[k])
    example = outer.trace.engine.example(tuple(shape), a.dtype, a.device, requires_grad)
    out = Value(outer.fresh_name(name), a.dtype, tuple(example.shape), a.device, ValueKind.TENSOR, example)
    for d, (x, y) in enumerate(zip(a.shape, b.shape)):
        if not same_dim(x, y):  # read from this output, unless another output of the `if` has it already
            outer.trace.symbols.output_dim(out.shape[d], out, d)
    return out, requires_grad


def cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any], *,
         names: Sequence[str] | None = None, origin: SourceLocation | None = None) -> Any:
    """`true_fn() if pred else false_fn()`, as a graph `cond` when `pred` is a graph tensor.

    Both functions return the same structure; the result has that structure.
    A value produced by both branches must have the same dtype (and the same
    Python type for Python numbers); shapes may differ (the merged dim is None).

    Raises:
        TypeError: the branches return different structures or dtypes.
        ValueError: a branch leaves a value None where the other does not.
    """
    state = current()
    if state is None or not is_graph_value(pred):
        return true_fn() if pred else false_fn()
    origin = origin or user_location()
    p = state.to_value(pred)
    try:
        check_predicate(p, "if statement", origin)
    except ValueError as e:
        if state.parent is None:
            raise  # fails at every call
        # In a branch or loop body, which may never run: an error only when it runs, as in Python.
        never = torch.zeros((), dtype=torch.bool)
        check(never, str(e), origin)
        p = state.to_value(never)
    tb, fb = Branch("true", state), Branch("false", state)
    # A branch the user's code raises in ends with a node raising it: its outputs are never read (raises.py).
    t_out, _ = run_or_raise(tb, true_fn, lambda: UNSET)
    f_out, _ = run_or_raise(fb, false_fn, lambda: UNSET)
    try:
        return _staged(state, p, tb, fb, t_out, f_out, names, origin)
    except (TypeError, ValueError) as refusal:
        # Branches one graph value cannot hold (results of two ranks, a value and None) under a condition on sizes
        # the call gives (`if x.shape[0] > 2:`): decided on this call's sizes, the answer an assumption checked at
        # each call (a call breaking it traces again), and only the branch taken traced, as Python runs it.
        answer = _decided_on_sizes(state, pred, refusal)
        if answer is None:
            raise
    return true_fn() if answer else false_fn()


def _decided_on_sizes(state: Scope, pred: Any, refusal: Exception) -> bool | None:
    """`bool(pred)` for a condition on input sizes, taken on the call's sizes (a trace backed by them: else it
    traces again, backed), that answer becoming a checked assumption; None for any other condition (a tensor, a
    size made while tracing, a trace from a signature alone)."""
    if not isinstance(pred, torch.SymBool):
        return None
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    try:
        return bool(pred)
    except GuardOnDataDependentSymNode:
        if not state.trace.request.backed:
            raise NeedsSizeError(str(refusal)) from refusal
        return None


def _staged(state: Scope, p: Value, tb: Branch, fb: Branch, t_out: Any, f_out: Any,
            names: Sequence[str] | None, origin: SourceLocation | None) -> Any:
    """The `cond` node of the two traced branches, recorded in `state`; its results, packed as `t_out`."""
    t_out, f_out = _fill_unset(t_out, f_out), _fill_unset(f_out, t_out)
    t_leaves, f_leaves = _matching_leaves(t_out, f_out, names, origin)
    results: list[Any] = []
    t_vals, f_vals, outs = [], [], []
    pairs: dict = {}
    for i, (a, b) in enumerate(zip(t_leaves, f_leaves)):
        name = _leaf_name(names, t_out, i)
        merged = _merge_pair(state, tb, fb, name, a, b, origin, pairs)
        if isinstance(merged, tuple):
            va, vb, out, requires_grad, promoted = merged
            t_vals.append(va)
            f_vals.append(vb)
            outs.append(out)
            result = state.wrap(out, requires_grad=requires_grad)
            if promoted:
                result._maybe_number = True  # a Python number on one path: `y op= x` decides when it runs
            results.append(result)
        else:
            results.append(merged)
    tb.graph.outputs, fb.graph.outputs = t_vals, f_vals
    eliminate_dead_code(tb.graph)
    eliminate_dead_code(fb.graph)
    lifted = unique_values([v for g in (tb.graph, fb.graph) for v in g.inputs])
    op = control_op(CondOp(), "cond", [n for g in (tb.graph, fb.graph) for n in g.nodes])
    node = Node(op, (p, *lifted), {}, tuple(outs),
                pattern=tuple(outs), origin=origin, subgraphs=(tb.graph, fb.graph))
    state.add_node(node)
    return nest.pack_sequence_as(t_out, results)


def _merge_pair(state: Scope, tb: Branch, fb: Branch, name: str, a: Any, b: Any,
                origin: SourceLocation | None, pairs: dict | None = None) -> Any:
    """Either a Python value both branches share, or (true value, false value, merged Value)."""
    ka, kb = leaf_kind(a), leaf_kind(b)
    if ka == Leaf.UNSET and kb == Leaf.UNSET:
        return UNSET
    # A value never read on one side (UNSET) lets a Python value from the other pass through as is.
    if ka == Leaf.UNSET and kb in (Leaf.PYSCALAR, Leaf.OBJECT):
        return b
    if kb == Leaf.UNSET and ka in (Leaf.PYSCALAR, Leaf.OBJECT):
        return a
    if ka in (Leaf.PYSCALAR, Leaf.OBJECT) and kb in (Leaf.PYSCALAR, Leaf.OBJECT) and type(a) is type(b) and (a is b or a == b):
        return a
    if Leaf.OBJECT in (ka, kb):
        if a is None or b is None:
            which = "main" if a is None else "else"
            raise ValueError(f"{quoted(name)} is None at the end of the {which} branch of the `if`{where(origin)}; a "
                             f"graph `if` needs a value of the same type from both branches.")
        raise TypeError(f"{quoted(name)} is {describe(a)} in the main branch but {describe(b)} in the else branch "
                        f"of the "
                        f"`if`{where(origin)}; a Python object that differs between the branches of a graph `if` "
                        f"cannot be merged. Make it a tensor, or compute it outside the `if`.")
    va = None if ka == Leaf.UNSET else to_value(tb, a)
    vb = None if kb == Leaf.UNSET else to_value(fb, b)
    # Python numbers on one side and tensors on the other: the number becomes a tensor.
    promoted = False
    if isinstance(va, Value) and va.kind is ValueKind.TENSOR and kb in (Leaf.PYSCALAR, Leaf.SCALAR):
        _check_number_fits(name, va, vb, "else", origin)
        vb, promoted = as_tensor_in(fb, b, va), True
    elif isinstance(vb, Value) and vb.kind is ValueKind.TENSOR and ka in (Leaf.PYSCALAR, Leaf.SCALAR):
        _check_number_fits(name, vb, va, "main", origin)
        va, promoted = as_tensor_in(tb, a, vb), True
    # A Python int on one side and a float on the other (known now or when the graph runs): the int
    # becomes the float that equals it.
    elif _number_dtype(va, ka) == torch.int64 and _number_dtype(vb, kb) == torch.float64:
        va = _as_float(tb, a, va)
    elif _number_dtype(vb, kb) == torch.int64 and _number_dtype(va, ka) == torch.float64:
        vb = _as_float(fb, b, vb)
    promoted = promoted or _maybe_number(a) or _maybe_number(b)
    # A list one branch sets and the other never reads (`return v` from a loop over a tensor): an empty one there.
    if va is None and lists.is_list_value(vb):
        va = _unset_in(tb, vb)
    if vb is None and lists.is_list_value(va):
        vb = _unset_in(fb, va)
    if isinstance(va, Value) and isinstance(vb, Value) and va.kind is vb.kind is ValueKind.LIST:
        dtype, shape, device = lists.merge_elements(va if va.dtype is not None else None, vb,
                                                     f"{quoted(name)} in the branches of the `if`{where(origin)}") \
            if vb.dtype is not None else (va.dtype, va.shape, va.device)
        return va, vb, Value(state.fresh_name(name), dtype, shape, device, ValueKind.LIST), False, False
    if va is None:
        va = _unset_in(tb, vb)
    if vb is None:
        vb = _unset_in(fb, va)
    ta_, tb_ = value_type(va), value_type(vb)
    if ta_[0] != tb_[0] or ta_[1] != tb_[1]:
        raise TypeError(f"{quoted(name)} has {type_words(ta_)} in the main branch, but {type_words(tb_)} in the else "
                        f"branch of the `if`{where(origin)}; both branches must give it the same type.")
    if ta_[2] != tb_[2]:
        raise TypeError(f"{quoted(name)} is on {ta_[2]} in the main branch but on {tb_[2]} in the else branch of the "
                        f"`if`{where(origin)}.")
    if ta_[0] is ValueKind.TENSOR and len(va.shape) != len(vb.shape):
        raise TypeError(f"{quoted(name)} has {len(va.shape)} dims in the main branch but {len(vb.shape)} in the else "
                        f"branch of the `if`{where(origin)}; a graph `if` keeps the rank of each value.")
    out, requires_grad = merged_value(state, name, _meta_of(va), _meta_of(vb), pairs)
    return va, vb, out, requires_grad, promoted


def _check_number_fits(name: str, tensor: Value, number: Any, number_side: str, origin: SourceLocation | None) -> None:
    """Refuse a number one branch gives where the other gives a tensor it cannot become without a new value."""
    if number_fits(number, tensor):
        return
    tensor_side = "main" if number_side == "else" else "else"
    raise TypeError(f"{quoted(name)} has dtype {tensor.dtype} in the {tensor_side} branch, but "
                    f"{type_words(value_type(number))} in the {number_side} branch of the `if`{where(origin)}; both "
                    f"branches must give it the same type (as a {tensor.dtype} tensor, the number would change "
                    f"value). Convert one of them (`float(...)`, `.to(...)`).")


def _number_dtype(v: Any, kind: Leaf) -> Any:
    """The dtype of a Python number or run-time number a branch gives, else None."""
    if kind not in (Leaf.PYSCALAR, Leaf.SCALAR):
        return None
    if isinstance(v, Value):
        return v.dtype if v.kind is ValueKind.SCALAR else None
    return SCALAR_DTYPES.get(type(v))


def _as_float(branch: Branch, x: Any, v: Any) -> Any:
    """`float(x)` for an int a branch gives: a Python float, or a run-time one of the branch."""
    if not isinstance(v, Value):
        return float(v)
    return branch.record(lambda: branch.state.to_value(traced(torch.sym_float(x))))


def _maybe_number(x: Any) -> bool:
    return getattr(x, "_maybe_number", False) is True


def _meta_of(v: Any) -> Any:
    if isinstance(v, Value):
        return v
    return Value("_", SCALAR_DTYPES[type(v)], (), None, ValueKind.SCALAR)


def _fill_unset(out: Any, other: Any) -> Any:
    """An UNSET variable takes the structure of its counterpart (e.g. a return slot vs `return (a, b)`)."""
    if out is UNSET and other is not UNSET:
        return nest.map_structure(lambda _: UNSET, other)
    if type(out) is tuple and type(other) is tuple and len(out) == len(other):
        return tuple(_fill_unset(o, t) for o, t in zip(out, other))
    return out


def _matching_leaves(t_out: Any, f_out: Any, names: Sequence[str] | None,
                     origin: SourceLocation | None) -> tuple[list, list]:
    if not nest.same_structure(t_out, f_out):
        label = quoted(names[0]) if names and len(names) == 1 else "the outputs"
        raise TypeError(f"{label} must have the same nested structure in the main and else branches of the "
                        f"`if`{where(origin)}:\n  main: {structure_repr(t_out)}\n  else: {structure_repr(f_out)}")
    return nest.flatten(t_out), nest.leaves_like(t_out, f_out)  # dicts may list their keys in another order


def _leaf_name(names: Sequence[str] | None, out: Any, i: int) -> str:
    if names and len(names) == 1 and not isinstance(out, (tuple, list)):
        return names[0]
    if names and isinstance(out, (tuple, list)) and len(out) == len(names) and i < len(names):
        return names[i]
    return f"output {i}"


def check(condition: Any, message: str, origin: SourceLocation | None = None) -> None:
    """A run-time check: raise `InvalidArgumentError(message)` when the graph runs and `condition` is false."""
    state = current()
    if state is None or not is_graph_value(condition):
        if not condition:
            raise errors.InvalidArgumentError(message)
        return
    v = state.to_value(condition)
    state.add_node(Node(Op(OpKind.CONTROL, CheckOp(message), "check", effects=Effect.RAISES), (v,), {}, (),
                                  origin=origin or user_location()))
