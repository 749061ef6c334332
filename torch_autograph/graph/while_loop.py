"""Graph `while` loops: `while_loop` traces the condition and the body once each into sub-graphs.

Loop variables may be tensors, run-time Python numbers (a counter stays a
Python int when the graph runs), graph lists (a list appended to in the
body) or nests of them. Types that only show up in the body are learned by
tracing again: a Python number the body turns into a tensor is promoted, a
variable first assigned in the body gets a placeholder initial value and a
run-time check that the loop ran, a list that grows becomes a graph list.

Printed form::

    %i_1: int, %acc_1: float32[3] = while((0, %y), loop_vars=(%i, %acc))
        graph cond(i: int, acc: float32[3], n: int64[]) { %lt = %i < %n ... }
        graph body(i: int, acc: float32[3]) { ... return %add, %mul }
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from . import lists, tracer
from .control_flow import (UNSET, WhileOp, _Branch, _as_tensor_in, _check_predicate, _describe, _leaf_kind,
                           _SCALAR_DTYPES, _structure_repr, _to_value, _type_words, _value_type, _where, check)
from .graph import Node, Op, OpKind, SourceLocation, Value, ValueKind, unique_values
from .passes.dead_code import eliminate_dead_code
from .tensor import GraphTensor, make_graph_tensor


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


