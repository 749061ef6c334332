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


def _as_tensor_in(branch: _Branch, x: Any, like: Value) -> Value:
    """Convert a Python number or run-time scalar produced by `branch` to a tensor like `like`."""

    def make() -> Any:
        src = branch.state.to_graph_tensor(x) if isinstance(x, GraphTensor) else x
        return torch.tensor(src, dtype=like.dtype, device=like.device)

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
    _check_predicate(p, "if statement", origin)
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


def _check_predicate(p: GraphTensor, what: str, origin: SourceLocation | None) -> None:
    v = p._value
    if v.kind is ValueKind.TENSOR and v.shape is not None and None not in v.shape:
        n = 1
        for d in v.shape:
            n *= d
        if n != 1:
            raise ValueError(f"condition of {what} expected a single-element tensor{_where(origin)}, got "
                             f"{v.type_str()}: a tensor with {n} elements has no truth value. Reduce it first "
                             f"(e.g. `.any()` or `.all()`).")


# ----- while_loop --------------------------------------------------------------------------
def while_loop(cond_fn: Callable[..., Any], body_fn: Callable[..., Any], loop_vars: Sequence[Any], *,
               names: Sequence[str] | None = None, shape_invariants: dict[int, Any] | None = None,
               maximum_iterations: Any = None, origin: SourceLocation | None = None,
               require_iteration: Sequence[int] = ()) -> tuple:
    """`while cond_fn(*vars): vars = body_fn(*vars)`, as a graph `while` when the condition is a graph value.

    Args:
        cond_fn: takes the loop variables, returns a (graph) bool.
        body_fn: takes the loop variables, returns their new values (same structure).
        loop_vars: the initial values: tensors, Python numbers (they stay Python
            numbers at run time), or any other object the body leaves unchanged.
        names: the variables' names, for messages.
        shape_invariants: loop-var index -> shape (None dims may change between iterations).
        maximum_iterations: stop after this many iterations.
        require_iteration: indices of UNSET loop vars (first assigned in the body)
            whose later use needs the loop to have run once: a run-time check.

    Returns:
        The final loop variables as a tuple.
    """
    loop_vars = tuple(loop_vars)
    state = tracer.current()
    if state is None:
        return _python_while(cond_fn, body_fn, loop_vars, maximum_iterations)
    origin = origin or tracer.user_location()
    names = tuple(names) if names else tuple(f"loop_var_{i}" for i in range(len(loop_vars)))
    to_list: set[int] = set()
    structured_unset: dict[int, Any] = {}
    for _ in range(6):
        snapshots = {i: v[:] for i, v in enumerate(loop_vars) if type(v) is list}
        tops = tuple(lists.new_list(v) if i in to_list else structured_unset.get(i, v)
                     for i, v in enumerate(loop_vars))
        try:
            return _structured_while(state, cond_fn, body_fn, tops, names, shape_invariants or {},
                                     maximum_iterations, origin, require_iteration)
        except _ListGrew as grew:
            # A Python list appended to in the loop body: undo the trace-time appends and carry
            # it as a graph list instead (SPEC decision 4).
            for i, items in snapshots.items():
                loop_vars[i][:] = items
            to_list.add(grew.index)
        except _UnsetTakesStructure as found:
            structured_unset[found.index] = found.value
    raise AssertionError("bug in torch_autograph: loop variable types did not settle")


class _ListGrew(Exception):
    def __init__(self, index: int) -> None:
        self.index = index


class _UnsetTakesStructure(Exception):
    """A variable first assigned in the loop turned out to be a structure (e.g. `return (a, b)`)."""

    def __init__(self, index: int, value: Any) -> None:
        self.index = index
        self.value = value


def _structured_while(state: tracer.TraceState, cond_fn: Callable, body_fn: Callable, tops: tuple,
                      names: tuple, invariants: dict, maximum_iterations: Any, origin: SourceLocation | None,
                      require_iteration: Sequence[int]) -> tuple:
    """Flatten nested loop variables to leaves, run the leaf-level loop, pack the results."""
    from .. import nest

    chunks = [nest.flatten(v) for v in tops]
    leaf_names, leaf_top, flat = [], [], []
    for i, chunk in enumerate(chunks):
        for j, leaf in enumerate(chunk):
            leaf_names.append(names[i] if len(chunk) == 1 and chunk[0] is tops[i] else f"{names[i]}_{j}")
            leaf_top.append(i)
            flat.append(leaf)
    structures = [nest.structure_signature(v) for v in tops]

    def pack(leaves: Sequence[Any]) -> tuple:
        out, k = [], 0
        for i, chunk in enumerate(chunks):
            out.append(nest.pack_sequence_as(tops[i], list(leaves[k:k + len(chunk)])))
            k += len(chunk)
        return tuple(out)

    def flat_cond(*leaves: Any) -> Any:
        return cond_fn(*pack(leaves))

    def flat_body(*leaves: Any) -> tuple:
        out = tuple(body_fn(*pack(leaves)))
        if len(out) != len(tops):
            raise TypeError(f"the loop body{_where(origin)} returned {len(out)} values for {len(tops)} loop variables")
        result = []
        for i, (o, top) in enumerate(zip(out, tops)):
            if nest.structure_signature(o) != structures[i]:
                if type(top) is list and (type(o) is list or isinstance(o, lists.GraphList)):
                    raise _ListGrew(i)
                if top is UNSET:
                    raise _UnsetTakesStructure(i, nest.map_structure(lambda _: UNSET, o))
                raise TypeError(f"'{names[i]}' does not have the same nested structure after one iteration of the "
                                f"loop{_where(origin)}:\n  before: {_structure_repr(top)}\n  after:  "
                                f"{_structure_repr(o)}")
            result.extend(nest.flatten(o))
        return tuple(result)

    leaf_invariants = {k: invariants[i] for k, i in enumerate(leaf_top) if i in invariants and len(chunks[i]) == 1}
    leaf_require = {k for k, i in enumerate(leaf_top) if i in set(require_iteration)}
    promote: dict[int, Value] = {}
    refined: dict[int, Value] = {}
    inferred: dict[int, Any] = {}
    for _ in range(8):
        result = _try_while(state, flat_cond, flat_body, tuple(flat), leaf_names, leaf_invariants,
                            maximum_iterations, origin, promote, leaf_require, refined, inferred)
        if result is _RETRY:
            continue
        if isinstance(result, tuple) and result and result[0] is _PROMOTE:
            promote.update(result[1])
            continue
        if isinstance(result, dict):
            refined.update(result)
            continue
        return pack(result)
    raise AssertionError("bug in torch_autograph: loop variable types did not settle")


def _python_while(cond_fn: Callable, body_fn: Callable, loop_vars: tuple, maximum_iterations: Any) -> tuple:
    i = 0
    while cond_fn(*loop_vars):
        if maximum_iterations is not None and i >= maximum_iterations:
            break
        loop_vars = tuple(body_fn(*loop_vars))
        i += 1
    return loop_vars


def _loop_name(names: Sequence[str] | None, i: int) -> str:
    return names[i] if names and i < len(names) else f"loop_var_{i}"


def _try_while(state: tracer.TraceState, cond_fn: Callable, body_fn: Callable, loop_vars: tuple,
               names: Sequence[str] | None, invariants: dict, maximum_iterations: Any,
               origin: SourceLocation | None, promote: dict[int, Value], require: set[int],
               refined: dict[int, Value], inferred: dict[int, Any]) -> Any:
    # 1. Initial values as graph values (Python numbers promoted to tensors where the body needs that).
    inits: list[Any] = []
    unset = [i for i in inferred if loop_vars[i] is UNSET]
    for i, v in enumerate(loop_vars):
        if i in inferred:
            v = inferred[i]
        if i in promote and _leaf_kind(v) in ("pyscalar", "scalar"):
            # A Python number the body turns into a tensor (`total = 0; total += t`): start it as a
            # tensor of the type the body gives it, as `0 + t` would.
            like = promote[i]
            v = torch.tensor(v, dtype=like.dtype, device=like.device)
        inits.append(v)
    # 2. The loop variables read by the condition and the body.
    carried: dict[int, Value] = {}
    for i, v in enumerate(inits):
        kind = _leaf_kind(v)
        if kind in ("object", "unset"):
            continue
        if kind == "pyscalar":
            meta = Value("_", _SCALAR_DTYPES[type(v)], (), None, ValueKind.SCALAR)
        else:
            meta = state.to_graph_tensor(v)._value if isinstance(v, GraphTensor) else state.capture(v)._value
        meta = refined.get(i, meta)
        shape = meta.shape
        if i in invariants:
            inv = invariants[i]
            shape = None if inv is None else tuple(None if d is None else int(d) for d in inv)
            if not _fits(meta.shape, shape):
                raise ValueError(f"'{_loop_name(names, i)}' has shape {_shape_words(meta.shape)} before the loop, "
                                 f"which does not conform with the shape invariant {_shape_words(shape)}"
                                 f"{_where(origin)}.")
        carried[i] = Value(state.fresh_name(_loop_name(names, i)), meta.dtype, shape, meta.device, meta.kind)
    required = [i for i in unset if i in require]
    iterated = Value(state.fresh_name("iterated"), torch.bool, (), None, ValueKind.SCALAR) if required else None

    def structured(branch: _Branch) -> list[Any]:
        vals = []
        for i, v in enumerate(inits):
            if i in carried:
                branch.graph.inputs.append(carried[i])
                vals.append(make_graph_tensor(carried[i], branch.state))
            else:
                vals.append(v)
        if iterated is not None:
            branch.graph.inputs.append(iterated)
        return vals

    cb, bb = _Branch("cond", state), _Branch("body", state)
    pred = cb.run(lambda: cond_fn(*structured(cb)))
    body_out = bb.run(lambda: tuple(body_fn(*structured(bb))))
    if len(body_out) != len(inits):
        raise TypeError(f"the loop body{_where(origin)} returned {len(body_out)} values for {len(inits)} loop "
                        f"variables")
    # 3. Check the body's outputs against the loop variables.
    need_promotion: dict[int, Value] = {}
    refine: dict[int, Value] = {}
    new_inits: dict[int, Any] = {}
    outs: list[Any] = []
    for i, (init, out) in enumerate(zip(inits, body_out)):
        name = _loop_name(names, i)
        if i not in carried:
            if init is UNSET and out is not UNSET:
                # First assigned inside the loop: start it at a placeholder of the type the body gives
                # it (decision 7) and trace again.
                new_inits[i] = _placeholder_init(out, name, origin)
                continue
            if not (out is init or (type(out) is type(init) and _safe_eq(out, init))):
                if _leaf_kind(out) in ("tensor", "scalar", "pyscalar") and init is None:
                    raise ValueError(f"'{name}' is None before the loop{_where(origin)} but becomes "
                                     f"{_describe(out)} in it; give it an initial value of that type before the "
                                     f"loop.")
                raise TypeError(f"'{name}' does not have the same nested structure after one iteration of the "
                                f"loop{_where(origin)}: {_describe(init)} before, {_describe(out)} after.")
            continue
        lv = carried[i]
        ok = _leaf_kind(out)
        if ok == "object":
            if out is None:
                raise ValueError(f"'{name}' is None at the end of the iteration of the loop{_where(origin)}.")
            raise TypeError(f"'{name}' does not have the same nested structure after one iteration of the "
                            f"loop{_where(origin)}: {lv.type_str()} before, {_describe(out)} after.")
        if lv.kind is ValueKind.SCALAR and ok == "tensor":
            need_promotion[i] = _to_value(bb, out)
            continue
        if lv.kind is ValueKind.TENSOR and ok in ("pyscalar", "scalar"):
            ov = _as_tensor_in(bb, out, lv)
        else:
            ov = _to_value(bb, out)
        if lv.kind is ValueKind.LIST:
            if not (isinstance(ov, Value) and ov.kind is ValueKind.LIST):
                raise TypeError(f"'{name}' is a list before the loop{_where(origin)} but {_describe(out)} after one "
                                f"iteration.")
            if ov.dtype is not None and (lv.dtype is None or not _fits(ov.shape, lv.shape)):
                dtype, shape, device = lists.merge_elements(lv if lv.dtype is not None else None, ov, f"'{name}'")
                refine[i] = Value(lv.name, dtype, shape, device, ValueKind.LIST)
            elif ov.dtype is not None and ov.dtype != lv.dtype:
                raise TypeError(f"'{name}' holds {lv.dtype} tensors before the loop but {ov.dtype} after one "
                                f"iteration{_where(origin)}.")
            outs.append((i, ov))
            continue
        ot = _value_type(ov)
        if ot[1] != lv.dtype:
            raise TypeError(f"'{name}' has {_type_words((lv.kind, lv.dtype, None))} before the loop, but "
                            f"{_type_words(ot)} after one iteration{_where(origin)}; a graph loop variable keeps "
                            f"its type. Cast it before the loop or inside the body.")
        oshape = ov.shape if isinstance(ov, Value) else ()
        if lv.kind is ValueKind.TENSOR and not _fits(oshape, lv.shape):
            raise ValueError(f"'{name}' has shape {_shape_words(lv.shape)} before the loop, but shape "
                             f"{_shape_words(oshape)} after one iteration{_where(origin)}. Use "
                             f"ta.autograph.experimental.set_loop_options(shape_invariants=[({name}, "
                             f"{_relaxed(lv.shape, oshape)})]) to let it change.")
        outs.append((i, ov))
    if new_inits:
        inferred.update(new_inits)
        return _RETRY
    if need_promotion:
        return (_PROMOTE, need_promotion)
    if refine:
        return refine
    cond_value = _cond_output(cb, pred, origin)
    cb.graph.outputs = [cond_value]
    bb.graph.outputs = [ov for _, ov in outs] + ([True] if iterated is not None else [])
    eliminate_dead_code(cb.graph)
    eliminate_dead_code(bb.graph)
    # 4. The node.
    max_iter = maximum_iterations
    if isinstance(max_iter, GraphTensor):
        max_iter = state.to_graph_tensor(max_iter)._value
    init_args = []
    for i in carried:
        v = inits[i]
        init_args.append(v if _leaf_kind(v) == "pyscalar" else
                         (state.to_graph_tensor(v)._value if isinstance(v, GraphTensor) else state.capture(v)._value))
    loop_values = tuple(carried.values()) + ((iterated,) if iterated is not None else ())
    if iterated is not None:
        init_args.append(False)
    final = {i: Value(state.fresh_name(_loop_name(names, i)), lv.dtype, lv.shape, lv.device, lv.kind)
             for i, lv in carried.items()}
    final_iterated = Value(state.fresh_name("iterated"), torch.bool, (), None, ValueKind.SCALAR) if iterated else None
    outputs = tuple(final.values()) + ((final_iterated,) if final_iterated is not None else ())
    lifted = unique_values([v for g in (cb.graph, bb.graph) for v in g.inputs if all(v is not lv for lv in loop_values)])
    stateful = any(n.stateful for g in (cb.graph, bb.graph) for n in g.nodes)
    extra = (max_iter,) if isinstance(max_iter, Value) else ()
    node = Node(Op(OpKind.CONTROL, WhileOp(loop_values, max_iter), "while", stateful=stateful),
                (tuple(init_args), *lifted, *extra), {}, outputs, pattern=outputs, origin=origin,
                subgraphs=(cb.graph, bb.graph))
    state.graph.nodes.append(node)
    if final_iterated is not None:
        missing = ", ".join(f"'{_loop_name(names, i)}'" for i in required)
        check(GraphTensor(final_iterated, state),
              f"loop must iterate at least once to initialize {missing}{_where(origin)}", origin)
    return tuple(make_graph_tensor(final[i], state) if i in final else inits[i] for i in range(len(inits)))


def _safe_eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _cond_output(cb: _Branch, pred: Any, origin: SourceLocation | None) -> Any:
    if isinstance(pred, GraphTensor):
        g = cb.record(lambda: cb.state.to_graph_tensor(pred))
        _check_predicate(g, "while loop", origin)
        return g._value
    if isinstance(pred, torch.Tensor):
        return cb.record(lambda: cb.state.capture(pred))._value
    return bool(pred)


def _fits(shape: Any, invariant: Any) -> bool:
    if invariant is None:
        return True
    if shape is None or len(shape) != len(invariant):
        return False
    return all(b is None or a == b for a, b in zip(shape, invariant))


def _shape_words(shape: Any) -> str:
    if shape is None:
        return "<unknown rank>"
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _relaxed(a: Any, b: Any) -> str:
    if a is None or b is None or len(a) != len(b):
        return "None"
    return "[" + ", ".join(str(x) if x == y else "None" for x, y in zip(a, b)) + "]"


_RETRY = object()
_PROMOTE = object()


def _placeholder_init(v: Any, name: str, origin: SourceLocation | None) -> Any:
    """A stand-in initial value of `v`'s type for a variable first assigned inside a loop."""
    if isinstance(v, GraphTensor):
        meta = v._value
        if meta.kind is ValueKind.SCALAR:
            return {torch.bool: False, torch.float64: 0.0}.get(meta.dtype, 0)
        if meta.kind is ValueKind.LIST:
            return lists.new_list([])
        shape = tuple(0 if d is None else d for d in (meta.shape if meta.shape is not None else (0,)))
        return torch.zeros(shape, dtype=meta.dtype, device=meta.device)
    if type(v) in _SCALAR_DTYPES:
        return type(v)()
    if isinstance(v, torch.Tensor):
        return torch.zeros_like(v)
    raise ValueError(f"'{name}' must be defined before the loop{_where(origin)}: it is first assigned inside the "
                     f"loop, and its type ({type(v).__name__}) cannot be given a placeholder value. Supported types "
                     f"are tensors and Python numbers.")


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
