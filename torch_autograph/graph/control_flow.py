"""Graph control flow: `cond` and `while_loop` nodes holding traced sub-graphs.

`ta.cond(pred, true_fn, false_fn)` with a graph-tensor predicate traces both
branches into sub-graphs and records one `cond` node; the torch backend runs
it as a Python `if` on the evaluated predicate, so autograd records exactly
the path taken. `ta.while_loop(cond, body, loop_vars)` traces the condition
and the body once each and records a `while` node run as a Python `while`.
With a Python predicate both behave exactly like Python.

Printed form::

    %y: float32[3] = cond(%gt)  # demo.py:5
        graph true() { %mul = %x * 2 ... return %mul }
        graph false() { ... }

Python numbers stay Python numbers: a counter `i = 0` carried through a loop
is a run-time Python int (a SCALAR value), not a tensor, so a graph loop costs
what the same Python loop costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from .. import errors
from . import lists, tracer
from .graph import Graph, Node, Op, OpKind, SourceLocation, Value, ValueKind, unique_values
from .passes.dead_code import eliminate_dead_code
from .shape_inference import Meta
from .tensor import GraphTensor, make_graph_tensor

_SCALAR_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64}


class Unset:
    """A branch or loop value that may be anything of the other side's type.

    Used for a function's return slot before a `return` ran (its reads are
    guarded) and for loop variables first assigned inside the loop.
    """

    _instance = None

    def __new__(cls) -> "Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset()


@dataclass(frozen=True, eq=False)
class CondOp:
    """Target of a `cond` node: subgraphs[0] runs when args[0] is true, subgraphs[1] otherwise."""

    def __repr__(self) -> str:
        return "cond"

    def describe_extra(self) -> str:
        return ""


@dataclass(frozen=True, eq=False)
class WhileOp:
    """Target of a `while` node.

    `loop_vars` are the values the condition (subgraphs[0], one output) and
    the body (subgraphs[1], one output per loop var) read; node args start
    with their initial values. `maximum_iterations` is None, an int or a Value.
    """

    loop_vars: tuple[Value, ...]
    maximum_iterations: Any = None
    checks_iteration: bool = False  # the last loop var says whether the body ran (variables first assigned in it)

    def __repr__(self) -> str:
        return "while"

    def describe_extra(self) -> str:
        names = ", ".join(f"%{v.name}" for v in self.loop_vars)
        limit = "" if self.maximum_iterations is None else f", maximum_iterations={self.maximum_iterations!r}"
        return f", loop_vars=({names}){limit}"


@dataclass(frozen=True, eq=False)
class CheckOp:
    """Target of a run-time check: raises InvalidArgumentError when args[0] is false."""

    message: str

    def __repr__(self) -> str:
        return "check"

    def describe_extra(self) -> str:
        return f", {self.message!r}"


def is_graph_value(x: Any) -> bool:
    return isinstance(x, GraphTensor)


def _leaf_kind(x: Any) -> str:
    if isinstance(x, GraphTensor):
        return {ValueKind.SCALAR: "scalar", ValueKind.LIST: "list"}.get(x._value.kind, "tensor")
    if isinstance(x, torch.Tensor):
        return "tensor"
    if type(x) in _SCALAR_DTYPES:
        return "pyscalar"
    if x is UNSET:
        return "unset"
    return "object"


def _describe(x: Any) -> str:
    if isinstance(x, GraphTensor):
        v = x._value
        return f"{v.type_str()}"
    if isinstance(x, torch.Tensor):
        return f"tensor {str(x.dtype).replace('torch.', '')}{list(x.shape)}"
    return f"{type(x).__name__} {x!r}"


def _where(origin: SourceLocation | None) -> str:
    if origin is None:
        return ""
    code = f" (`{origin.line}`)" if origin.line else ""
    return f" at {origin}{code}"


# ----- sub-graph tracing ------------------------------------------------------------------
class _Branch:
    """One traced sub-graph and the state that recorded it."""

    def __init__(self, name: str, outer: tracer.TraceState) -> None:
        self.graph = Graph(outer.fresh_name(name))
        self.outer = outer
        self.lifted: dict[int, GraphTensor] = {}
        self.state: tracer.TraceState | None = None

    def lift(self, g: GraphTensor) -> GraphTensor:
        outer_g = self.state.parent.to_graph_tensor(g)
        v = outer_g._value
        hit = self.lifted.get(id(v))
        if hit is None:
            self.graph.inputs.append(v)
            hit = self.lifted[id(v)] = make_graph_tensor(v, self.state)
        return hit

    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self.state is not None:
            with tracer.reenter(self.state):
                return fn(*args)
        with tracer.subtrace(self.graph, self.lift) as state:
            self.state = state
            return fn(*args)

    def record(self, fn: Callable[[], Any]) -> Any:
        """Record more ops into this (finished) branch, e.g. a conversion of its output."""
        return self.run(fn)


def _to_value(branch: _Branch, x: Any) -> Any:
    """A branch output as a graph output: a Value or a Python constant."""
    if isinstance(x, GraphTensor):
        return branch.record(lambda: branch.state.to_graph_tensor(x))._value
    if isinstance(x, torch.Tensor):
        return branch.record(lambda: branch.state.capture(x))._value
    return x


def number_to_tensor(x: Any, like: Value) -> GraphTensor:
    """`torch.tensor(x)` of `like`'s dtype and device for a Python number or run-time scalar, in the current trace.

    Recorded with `Op.converts_number`: re-typing tells this conversion, which
    the tracer inserted, from a user's `torch.tensor` call.
    """
    op = Op(OpKind.FUNCTION, torch.tensor, "tensor", converts_number=True)
    return tracer.record_with_meta(op, (x,), {"dtype": like.dtype, "device": like.device},
                                   Meta(like.dtype, (), like.device, ValueKind.TENSOR))


def _as_tensor_in(branch: _Branch, x: Any, like: Value) -> Value:
    """Convert a Python number or run-time scalar produced by `branch` to a tensor like `like`."""

    def make() -> Any:
        return number_to_tensor(branch.state.to_graph_tensor(x) if isinstance(x, GraphTensor) else x, like)

    return branch.record(make)._value


def _unset_in(branch: _Branch, like: Value) -> Any:
    """A stand-in of `like`'s type for a value that will never be read."""
    if like.kind is ValueKind.SCALAR:
        return {torch.bool: False, torch.float64: 0.0}.get(like.dtype, 0)
    shape = tuple(0 if d is None else d for d in (like.shape if like.shape is not None else (0,)))
    return branch.record(lambda: torch.zeros(shape, dtype=like.dtype, device=like.device))._value


def _merged_value(outer: tracer.TraceState, name: str, a: Any, b: Any) -> Value:
    dtype, device, kind = a.dtype, a.device, a.kind
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        shape = None
    else:
        shape = tuple(x if x == y else None for x, y in zip(a.shape, b.shape))
    return Value(outer.fresh_name(name), dtype, shape if kind is ValueKind.TENSOR else (), device, kind)


# ----- cond --------------------------------------------------------------------------------
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
    state = tracer.current()
    if state is None or not isinstance(pred, GraphTensor):
        return true_fn() if pred else false_fn()
    from .. import nest

    origin = origin or tracer.user_location()
    p = state.to_graph_tensor(pred)
    _check_predicate(p._value, "if statement", origin)
    tb, fb = _Branch("true", state), _Branch("false", state)
    t_out = tb.run(true_fn)
    f_out = fb.run(false_fn)
    t_out, f_out = _fill_unset(t_out, f_out), _fill_unset(f_out, t_out)
    t_leaves, f_leaves = _matching_leaves(t_out, f_out, names, origin)
    results: list[Any] = []
    t_vals, f_vals, outs = [], [], []
    for i, (a, b) in enumerate(zip(t_leaves, f_leaves)):
        name = _leaf_name(names, t_out, i)
        merged = _merge_pair(state, tb, fb, name, a, b, origin)
        if isinstance(merged, tuple):
            va, vb, out = merged
            t_vals.append(va)
            f_vals.append(vb)
            outs.append(out)
            results.append(make_graph_tensor(out, state))
        else:
            results.append(merged)
    tb.graph.outputs, fb.graph.outputs = t_vals, f_vals
    eliminate_dead_code(tb.graph)
    eliminate_dead_code(fb.graph)
    stateful = any(n.stateful for g in (tb.graph, fb.graph) for n in g.nodes)
    lifted = unique_values([v for g in (tb.graph, fb.graph) for v in g.inputs])
    node = Node(Op(OpKind.CONTROL, CondOp(), "cond", stateful=stateful), (p._value, *lifted), {}, tuple(outs),
                pattern=tuple(outs), origin=origin, subgraphs=(tb.graph, fb.graph))
    state.graph.nodes.append(node)
    return nest.pack_sequence_as(t_out, results)


def _merge_pair(state: tracer.TraceState, tb: _Branch, fb: _Branch, name: str, a: Any, b: Any,
                origin: SourceLocation | None) -> Any:
    """Either a Python value both branches share, or (true value, false value, merged Value)."""
    ka, kb = _leaf_kind(a), _leaf_kind(b)
    if ka == "unset" and kb == "unset":
        return UNSET
    # A value never read on one side (UNSET) lets a Python value from the other pass through as is.
    if ka == "unset" and kb in ("pyscalar", "object"):
        return b
    if kb == "unset" and ka in ("pyscalar", "object"):
        return a
    if ka in ("pyscalar", "object") and kb in ("pyscalar", "object") and type(a) is type(b) and (a is b or a == b):
        return a
    if "object" in (ka, kb):
        if a is None or b is None:
            which = "main" if a is None else "else"
            raise ValueError(f"'{name}' is None at the end of the {which} branch of the `if`{_where(origin)}; a "
                             f"graph `if` needs a value of the same type from both branches.")
        raise TypeError(f"'{name}' is {_describe(a)} in the main branch but {_describe(b)} in the else branch of the "
                        f"`if`{_where(origin)}; a Python object that differs between the branches of a graph `if` "
                        f"cannot be merged. Make it a tensor, or compute it outside the `if`.")
    va = None if ka == "unset" else _to_value(tb, a)
    vb = None if kb == "unset" else _to_value(fb, b)
    # Python numbers on one side and tensors on the other: the number becomes a tensor.
    if isinstance(va, Value) and va.kind is ValueKind.TENSOR and kb in ("pyscalar", "scalar"):
        vb = _as_tensor_in(fb, b, va)
    elif isinstance(vb, Value) and vb.kind is ValueKind.TENSOR and ka in ("pyscalar", "scalar"):
        va = _as_tensor_in(tb, a, vb)
    if isinstance(va, Value) and isinstance(vb, Value) and va.kind is vb.kind is ValueKind.LIST:
        dtype, shape, device = lists.merge_elements(va if va.dtype is not None else None, vb, f"'{name}'") \
            if vb.dtype is not None else (va.dtype, va.shape, va.device)
        return va, vb, Value(state.fresh_name(name), dtype, shape, device, ValueKind.LIST)
    if va is None:
        va = _unset_in(tb, vb)
    if vb is None:
        vb = _unset_in(fb, va)
    ta_, tb_ = _value_type(va), _value_type(vb)
    if ta_[0] != tb_[0] or ta_[1] != tb_[1]:
        raise TypeError(f"'{name}' has {_type_words(ta_)} in the main branch, but {_type_words(tb_)} in the else "
                        f"branch of the `if`{_where(origin)}; both branches must give it the same type.")
    if ta_[2] != tb_[2]:
        raise TypeError(f"'{name}' is on {ta_[2]} in the main branch but on {tb_[2]} in the else branch of the "
                        f"`if`{_where(origin)}.")
    out = _merged_value(state, name, _meta_of(va), _meta_of(vb))
    return va, vb, out


def _value_type(v: Any) -> tuple:
    if isinstance(v, Value):
        return (v.kind, v.dtype, v.device)
    return (ValueKind.SCALAR, _SCALAR_DTYPES[type(v)], None)


def _type_words(t: tuple) -> str:
    kind, dtype, _ = t
    if kind is ValueKind.SCALAR:
        return f"Python type {ScalarNames.get(dtype, 'int')}"
    return f"dtype {dtype}"


ScalarNames = {torch.bool: "bool", torch.int64: "int", torch.float64: "float"}


def _meta_of(v: Any) -> Any:
    if isinstance(v, Value):
        return v
    return Value("_", _SCALAR_DTYPES[type(v)], (), None, ValueKind.SCALAR)


def _fill_unset(out: Any, other: Any) -> Any:
    """An UNSET variable takes the structure of its counterpart (e.g. a return slot vs `return (a, b)`)."""
    from .. import nest

    if out is UNSET and other is not UNSET:
        return nest.map_structure(lambda _: UNSET, other)
    if type(out) is tuple and type(other) is tuple and len(out) == len(other):
        return tuple(_fill_unset(o, t) for o, t in zip(out, other))
    return out


def _matching_leaves(t_out: Any, f_out: Any, names: Sequence[str] | None,
                     origin: SourceLocation | None) -> tuple[list, list]:
    from .. import nest

    same = nest.structure_signature(t_out) == nest.structure_signature(f_out)
    if not same:
        label = f"'{names[0]}'" if names and len(names) == 1 else "the outputs"
        raise TypeError(f"{label} must have the same nested structure in the main and else branches of the "
                        f"`if`{_where(origin)}:\n  main: {_structure_repr(t_out)}\n  else: {_structure_repr(f_out)}")
    return nest.flatten(t_out), nest.flatten(f_out)


def _structure_repr(x: Any) -> str:
    from .. import nest

    return repr(nest.map_structure(lambda leaf: "Tensor" if isinstance(leaf, GraphTensor) else type(leaf).__name__,
                                   x))


def _leaf_name(names: Sequence[str] | None, out: Any, i: int) -> str:
    if names and len(names) == 1 and not isinstance(out, (tuple, list)):
        return names[0]
    if names and isinstance(out, (tuple, list)) and len(out) == len(names) and i < len(names):
        return names[i]
    return f"output {i}"


def _check_predicate(v: Value, what: str, origin: SourceLocation | None) -> None:
    if v.kind is ValueKind.TENSOR and v.shape is not None and None not in v.shape:
        n = 1
        for d in v.shape:
            n *= d
        if n != 1:
            raise ValueError(f"condition of {what} expected a single-element tensor{_where(origin)}, got "
                             f"{v.type_str()}: a tensor with {n} elements has no truth value. Reduce it first "
                             f"(e.g. `.any()` or `.all()`).")


# ----- checks ------------------------------------------------------------------------------
def check(condition: Any, message: str, origin: SourceLocation | None = None) -> None:
    """A run-time check: raise `InvalidArgumentError(message)` when the graph runs and `condition` is false."""
    state = tracer.current()
    if state is None or not isinstance(condition, GraphTensor):
        if not condition:
            raise errors.InvalidArgumentError(message)
        return
    v = state.to_graph_tensor(condition)._value
    state.graph.nodes.append(Node(Op(OpKind.CONTROL, CheckOp(message), "check", stateful=True), (v,), {}, (),
                                  origin=origin or tracer.user_location()))


def run_check(condition: Any, message: str) -> None:
    """What a `check` node does when the graph runs."""
    if not bool(condition):
        raise errors.InvalidArgumentError(message)


from .while_loop import while_loop  # noqa: E402,F401  (re-exported: the loop half of control flow)
