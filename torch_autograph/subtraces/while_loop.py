"""Graph `while` loops: `while_loop` traces the condition and the body once each into sub-graphs.

Loop variables may be tensors, run-time Python numbers (a counter stays a
Python int when the graph runs), graph lists (a list appended to in the
body) or nests of them. Some types only show up in the body: a Python number
the body turns into a tensor is promoted (`total = 0; total += t`), a
variable first assigned in the body gets a placeholder initial value and a
run-time check that the loop ran at least once, an empty list is a graph
list from the start and learns its element type from the appends. These are
found after the one trace of the body, and its recorded sub-graph is re-typed
(`retype.py`) instead of running the user's Python again, so Python side
effects in the body run once per trace, as in a Python loop traced once. That includes a number
promoted inside a tensor `if` or by an inner graph loop: the conversion to a
tensor they recorded (`Op.converts_number`) becomes the identity.

The body is traced a second time, running its Python side effects again, only
when re-typing cannot prove the recorded operations unchanged:

- a list that already has elements before the loop and grows in it (it may
  have been a fixed structure: the first trace says which);
- a Python number promoted to a tensor whose dtype differs from the one a
  tensor `if` or an inner graph loop converted it to, or that an inner graph
  loop reads without assigning it (the inner loop's recorded body reads a
  number);
- a list that a Python number is appended to before it is promoted
  (`out.append(n); n = n + t`): the list's element type changes with it;
- a variable first assigned in the loop whose value is a structure (a tuple
  returned from inside the loop), or first assigned in an inner graph loop;
- a Python number promoted to a tensor that an `n op= m` of numbers updated
  (it recorded nothing; on a tensor, which the variable may alias from the
  second iteration on, it updates in place), or whose arithmetic, recorded
  where its result is first used, would read it after an in-place update.

A promoted number starts the loop as a tensor remembered as a number
(promoted.py): `n op= m` on it rebinds on the first iteration, as in Python.

Printed form::

    %i_1: int, %acc_1: float32[3] = while((0, %y), loop_vars=(%i, %acc))
        graph cond(i: int, acc: float32[3], n: int64[]) { %lt = %i < %n ... }
        graph body(i: int, acc: float32[3]) { ... return %add, %mul }
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import torch

from .. import errors, nest
from ..graph import (
    Effect,
    Graph,
    Node,
    SourceLocation,
    Value,
    ValueKind,
    WhileOp,
    control_op,
    eliminate_dead_code,
    unique_values,
    walk_nodes,
)
from ..tracing import Scope, constant_of, current, is_graph_value, lists, same_dim, user_location
from .branches import (
    UNSET,
    Branch,
    Leaf,
    as_tensor_in,
    check_predicate,
    describe,
    leaf_kind,
    number_fits,
    number_to_tensor,
    quoted,
    structure_repr,
    to_value,
    type_words,
    value_type,
    where,
)
from .cond import check
from .loop_vars import (
    SharedSizes,
    carried_value,
    element_fits,
    final_value,
    fits_loop_var,
    iterated_value,
    loop_name,
    placeholder_init,
    shape_words,
)
from .raises import run_or_raise
from .retype import retype


def while_loop(cond_fn: Callable[..., Any], body_fn: Callable[..., Any], loop_vars: Sequence[Any], *,
               names: Sequence[str] | None = None, shape_invariants: dict[int, Any] | None = None,
               maximum_iterations: Any = None, origin: SourceLocation | None = None,
               require_iteration: Sequence[int] = (), trip_count: Any = None) -> tuple:
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
        trip_count: a `for` loop's number of elements (an upper bound on its iterations), or None.

    Returns:
        The final loop variables as a tuple.
    """
    loop_vars = tuple(loop_vars)
    state = current()
    if state is None:
        return _python_while(cond_fn, body_fn, loop_vars, maximum_iterations)
    origin = origin or user_location()
    names = tuple(names) if names else tuple(f"loop_var_{i}" for i in range(len(loop_vars)))
    # An empty Python list carried by a graph loop is there to grow: a graph list from the start, so
    # the body is traced once (a list with elements may be a fixed structure: learnt by tracing).
    to_list = {i for i, v in enumerate(loop_vars) if type(v) is list and not v}
    structured_unset: dict[int, Any] = {}
    for _ in range(6):
        snapshots = {i: v[:] for i, v in enumerate(loop_vars) if type(v) is list}
        tops = tuple(lists.new_list(v) if i in to_list else structured_unset.get(i, v)
                     for i, v in enumerate(loop_vars))
        try:
            return _structured_while(state, cond_fn, body_fn, tops, names, shape_invariants or {},
                                     (maximum_iterations, trip_count), origin, require_iteration)
        except _ListGrew as grew:
            # A Python list appended to in the loop body: undo the trace-time appends and carry
            # it as a graph list instead.
            for i, items in snapshots.items():
                loop_vars[i][:] = items
            to_list.add(grew.index)
        except _UnsetTakesStructure as found:
            structured_unset[found.index] = found.value
    raise AssertionError("bug in torch_autograph: loop variable types did not settle")


class FirstAssignedInBranch(ValueError):
    """A graph `if` whose branches do not both define `name`, undefined before it (`example`: the defined value).

    An enclosing graph loop for which `name` is first assigned in the loop gives it a placeholder and traces
    again; otherwise this is the user's error, as its message says.
    """

    def __init__(self, message: str, name: str, example: Any) -> None:
        super().__init__(message)
        self.name = name
        self.example = example


class _ListGrew(Exception):
    def __init__(self, index: int) -> None:
        self.index = index


class _UnsetTakesStructure(Exception):
    """A variable first assigned in the loop turned out to be a structure (e.g. `return (a, b)`)."""

    def __init__(self, index: int, value: Any) -> None:
        self.index = index
        self.value = value


def _structured_while(state: Scope, cond_fn: Callable, body_fn: Callable, tops: tuple,
                      names: tuple, invariants: dict, bounds: tuple, origin: SourceLocation | None,
                      require_iteration: Sequence[int]) -> tuple:
    """Flatten nested loop variables to leaves, run the leaf-level loop, pack the results."""
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
            raise TypeError(f"the loop body{where(origin)} returned {len(out)} values for {len(tops)} loop variables")
        result = []
        for i, (o, top) in enumerate(zip(out, tops)):
            if isinstance(top, lists.GraphList) and type(o) is list and all(isinstance(x, torch.Tensor) for x in o):
                o = lists.new_list(o)  # a graph-list variable given a new Python list (`out = [x]`)
            if nest.structure_signature(o) != structures[i]:
                if type(top) is list and (type(o) is list or isinstance(o, lists.GraphList)):
                    raise _ListGrew(i)
                if top is UNSET:
                    raise _UnsetTakesStructure(i, nest.map_structure(lambda _: UNSET, o))
                raise TypeError(f"{quoted(names[i])} does not have the same nested structure after one iteration of "
                                f"the "
                                f"loop{where(origin)}:\n  before: {structure_repr(top)}\n  after:  "
                                f"{structure_repr(o)}")
            result.extend(nest.leaves_like(tops[i], o))  # a dict may list its keys in another order
        return tuple(result)

    leaf_invariants = {k: invariants[i] for k, i in enumerate(leaf_top) if i in invariants and len(chunks[i]) == 1}
    leaf_require = {k for k, i in enumerate(leaf_top) if i in set(require_iteration)}
    promote: dict[int, Value] = {}
    refined: dict[int, Value] = {}
    inferred: dict[int, Any] = {}
    apart: set = set()  # entry sizes whose open dims the body grows differently (see SharedSizes)
    shrinks: set = set()  # entry sizes whose open dims the body makes smaller (see SharedSizes)
    for _ in range(8):
        try:
            result = _try_while(state, flat_cond, flat_body, tuple(flat), leaf_names, leaf_invariants,
                                bounds, origin, promote, leaf_require, refined, inferred, apart, shrinks)
        except FirstAssignedInBranch as e:
            # A variable first assigned in this loop, in one branch of a graph `if` of its body: as in
            # TensorFlow, it starts at a placeholder of that type, which the other branch carries on.
            k = next((k for k, n in enumerate(leaf_names) if n == e.name and flat[k] is UNSET and k not in inferred),
                     None)
            if k is None:
                raise
            inferred[k] = placeholder_init(e.example, e.name, origin)
            continue
        if not isinstance(result, _Retrace):
            return pack(result)
        promote.update(result.promote)
        refined.update(result.refined)
        inferred.update(result.inferred)
        for k, shape in result.relax.items():
            if leaf_invariants.get(k) == shape:
                # Traced with those dims symbolic, the body gave them back fixed: it reads them as Python
                # numbers (an index, a Python `if`), which a graph loop knows only when it runs.
                raise errors.OperatorNotAllowedInGraphError(
                    f"loop variable {quoted(leaf_names[k])} changes shape between iterations of the loop"
                    f"{where(origin)}, and the body reads its size {shape_words(shape)} as a Python number, which "
                    f"a graph loop knows only when it runs")
            leaf_invariants[k] = shape
            state.trace.notes.append(
                f"loop variable {quoted(leaf_names[k])} changes shape between iterations of the loop"
                f"{where(origin)}: its dims {shape_words(shape)} are symbolic (None: known only when the graph runs)")
    raise AssertionError("bug in torch_autograph: loop variable types did not settle")


def _python_while(cond_fn: Callable, body_fn: Callable, loop_vars: tuple, maximum_iterations: Any) -> tuple:
    i = 0
    while cond_fn(*loop_vars):
        if maximum_iterations is not None and i >= maximum_iterations:
            break
        loop_vars = tuple(body_fn(*loop_vars))
        i += 1
    return loop_vars


@dataclass
class _Retrace:
    """What a second trace of the body must start from, when re-typing the first trace was not possible."""

    promote: dict[int, Value] = field(default_factory=dict)
    refined: dict[int, Value] = field(default_factory=dict)
    inferred: dict[int, Any] = field(default_factory=dict)
    relax: dict[int, tuple] = field(default_factory=dict)  # loop var -> shape with None where it changes


@dataclass
class _Changes:
    """Loop variables whose type one traced iteration revealed (index -> what it becomes)."""

    promote: dict[int, Value] = field(default_factory=dict)  # Python number -> tensor like this value
    refine: dict[int, Value] = field(default_factory=dict)  # graph list -> this element type
    define: dict[int, Any] = field(default_factory=dict)  # first assigned in the body -> this placeholder init
    relax: dict[int, tuple] = field(default_factory=dict)  # tensor whose shape changes -> its relaxed shape
    rebound: dict[int, Any] = field(default_factory=dict)  # a Variable the body rebinds to a tensor -> its value

    def __bool__(self) -> bool:
        return bool(self.promote or self.refine or self.define or self.relax or self.rebound)


def _try_while(state: Scope, cond_fn: Callable, body_fn: Callable, loop_vars: tuple,
               names: Sequence[str] | None, invariants: dict, bounds: tuple,
               origin: SourceLocation | None, promote: dict[int, Value], require: set[int],
               refined: dict[int, Value], inferred: dict[int, Any], apart: set, shrinks: set) -> Any:
    # 1. Initial values as graph values (Python numbers promoted to tensors where the body needs that).
    inits: list[Any] = []
    for i, v in enumerate(loop_vars):
        if i in inferred:
            v = inferred[i]
        if i in promote and leaf_kind(v) in (Leaf.PYSCALAR, Leaf.SCALAR):
            v = _promoted(v, promote[i])
        inits.append(v)
    # 2. The loop variables read by the condition and the body.
    carried: dict[int, Value] = {}
    shared = SharedSizes(apart, shrinks)
    for i, v in enumerate(inits):
        if leaf_kind(v) not in (Leaf.OBJECT, Leaf.UNSET):
            carried[i] = carried_value(state, i, v, refined.get(i), invariants, names, origin, shared=shared)
    required = [i for i in inferred if loop_vars[i] is UNSET and i in require]
    iterated = iterated_value(state) if required else None

    def structured(branch: Branch) -> list[Any]:
        vals = []
        for i, v in enumerate(inits):
            if i in carried:
                branch.add_input(carried[i])
                wrapped = branch.state.wrap(carried[i])
                if i in promote and isinstance(wrapped, torch.Tensor):
                    wrapped._maybe_number = True  # a Python number on the first iteration (promoted.py)
                vals.append(wrapped)
            else:
                vals.append(v)
        if iterated is not None:
            branch.add_input(iterated)
        return vals

    # 3. Trace the condition and the body, each exactly once.
    cb, bb = Branch("cond", state), Branch("body", state)
    pred = cb.run(lambda: cond_fn(*structured(cb)))
    body_in: list[Any] = []

    def body() -> tuple:
        body_in[:] = structured(bb)
        return tuple(body_fn(*body_in))

    # A body the user's code raises in ends with a node raising it, and hands its variables on unchanged.
    body_out, _ = run_or_raise(bb, body, lambda: tuple(body_in))
    if len(body_out) != len(inits):
        raise TypeError(f"the loop body{where(origin)} returned {len(body_out)} values for {len(inits)} loop "
                        f"variables")
    pred_v = to_value(cb, pred)
    raw = [to_value(bb, o) for o in body_out]
    broken = shared.broken(raw)
    if broken:  # dims equal on entry that one iteration makes different: trace again with them apart
        apart.update(broken)
        return _Retrace()
    unfounded = shared.unfounded(raw, state.trace.symbols.decided)
    if unfounded:  # dims traced as never below their entry size that one iteration makes smaller
        shrinks.update(unfounded)
        return _Retrace()
    # 4. Types the iteration revealed: re-type the traced sub-graphs rather than trace again.
    seen = _Changes()
    for _ in range(8):
        changes = _type_changes(state, carried, inits, raw, body_out, names, origin, bb.graph)
        if not changes:
            break
        if changes.rebound:  # the body read the Variable itself: trace it again reading the carried value
            return _Retrace(promote=seen.promote, inferred={**seen.define, **changes.rebound})
        if changes.relax:  # a shape that changes between iterations: trace again with those dims symbolic
            return _Retrace(promote=seen.promote, inferred=seen.define, relax=changes.relax)
        if any(_symbol(carried[i]) in bb.state.augmented_symbols for i in changes.promote):
            # `n op= m` on numbers recorded nothing: once `n` is a tensor the same statement may update it
            # in place (it may alias another tensor from the second iteration on), which only a trace records.
            return _Retrace(promote={**seen.promote, **changes.promote}, inferred={**seen.define, **changes.define})
        for mine, theirs in ((seen.promote, changes.promote), (seen.refine, changes.refine),
                             (seen.define, changes.define)):
            mine.update(theirs)
        # A list's element type learnt while some number was still a number (`out.append(n)` before
        # `n = n + t`) is stale once it becomes a tensor: a second trace learns it again.
        retrace = _Retrace(promote=seen.promote, refined={} if seen.promote or seen.define else seen.refine,
                           inferred=seen.define)
        mapping: dict[int, Value] = {}
        for i, like in changes.promote.items():
            inits[i] = _promoted(inits[i], like)
            new = carried_value(state, i, inits[i], None, invariants, names, origin, reuse=carried[i].name)
            mapping[id(carried[i])] = carried[i] = new
        for i, new in changes.refine.items():
            mapping[id(carried[i])] = carried[i] = new
        if changes.define:
            if any(i in require for i in changes.define) and _checks_iteration(bb.graph):
                return retrace
            for i, init in changes.define.items():
                inits[i] = init
                carried[i] = carried_value(state, i, init, None, invariants, names, origin, shared=shared)
                cb.add_input(carried[i])
                bb.add_input(carried[i])
            carried = dict(sorted(carried.items()))
            if iterated is None and any(i in require for i in changes.define):
                required = [i for i in changes.define if i in require]
                iterated = iterated_value(state)
                cb.add_input(iterated)
                bb.add_input(iterated)
        full = retype((cb.graph, bb.graph), mapping)
        if full is None:
            # A node whose operation depends on the new types: trace the body again (see the module docstring).
            return retrace
        cb.state.refresh_defined()
        bb.state.refresh_defined()
        pred_v = _substitute(pred_v, full)
        raw = [_substitute(r, full) for r in raw]
    else:
        raise AssertionError("bug in torch_autograph: loop variable types did not settle")
    outs = _body_outputs(bb, carried, raw)
    cb.graph.outputs = [_cond_output(cb, pred_v, origin)]
    bb.graph.outputs = [ov for _, ov in outs] + ([True] if iterated is not None else [])
    eliminate_dead_code(cb.graph)
    eliminate_dead_code(bb.graph)
    return _while_node(state, cb, bb, carried, inits, iterated, required, names, bounds, origin, raw)


def _symbol(v: Value) -> Any:
    """The symbol standing for a run-time-number loop variable while its body is traced."""
    return getattr(getattr(v.example, "node", None), "expr", None)


def _promoted(v: Any, like: Value) -> Any:
    """A Python number the body turns into a tensor (`total = 0; total += t`) as a tensor of the body's type."""
    return number_to_tensor(v, like, promoted=True)


def _checks_iteration(g: Graph) -> bool:
    """Whether a loop nested in `g` initializes a variable first assigned in it (a run-time check).

    Such a loop started that variable at a placeholder; had the variable been
    a loop variable of `g`'s loop already, it would start from that instead.
    """
    return any(isinstance(node.op.target, WhileOp) and node.op.target.checks_iteration for node in walk_nodes(g))


def _substitute(x: Any, mapping: dict[int, Value]) -> Any:
    return mapping.get(id(x), x) if isinstance(x, Value) else x


def _raw_kind(r: Any) -> Leaf:
    if isinstance(r, Value):
        return {ValueKind.SCALAR: Leaf.SCALAR, ValueKind.LIST: Leaf.LIST}.get(r.kind, Leaf.TENSOR)
    return leaf_kind(r)


def _raw_words(r: Any, obj: Any) -> str:
    return r.type_str() if isinstance(r, Value) else describe(obj)


def _type_changes(state: Scope, carried: dict[int, Value], inits: list, raw: list, body_out: tuple,
                  names: Sequence[str] | None, origin: SourceLocation | None, body: Graph) -> _Changes:
    """Check the body's outputs against the loop variables; raise for errors, return the types to change."""
    changes = _Changes()
    for i, (init, r) in enumerate(zip(inits, raw)):
        name, out = loop_name(names, i), body_out[i]
        if i not in carried:
            if init is UNSET and r is not UNSET:
                # First assigned inside the loop: start it at a placeholder of the type the body gives
                # it, checked at run time to have run at least once.
                changes.define[i] = placeholder_init(r, name, origin)
                continue
            if "." not in name and _rebinds_tensor_like(init, out, body):
                # `i = var` before the loop, `i = i + 1` in it: the first iteration reads the Variable's value,
                # the later ones the tensor, so the loop carries that value from the start (a Variable no
                # update in the body changes: else the first iteration's read would be out of order). Not an
                # attribute (`self.v = self.v + 1`): the object would keep a graph value after the call.
                changes.rebound[i] = torch.clone(init)
                continue
            if hasattr(type(init), "_ta_graph_value") and leaf_kind(out) is Leaf.TENSOR and "." in name:
                raise TypeError(f"{quoted(name)} is {describe(init)} before the loop{where(origin)} and a tensor "
                                f"after one iteration: a graph loop variable keeps its type, and an attribute "
                                f"rebound to a tensor in a tensor loop would hold a graph value after the call. "
                                f"Carry the value in a local variable (`v = {name}.read_value()` before the loop, "
                                f"`v = v + 1` in it) and update the Variable after the loop (`{name}.assign(v)`).")
            if hasattr(type(init), "_ta_graph_value") and leaf_kind(out) is Leaf.TENSOR:
                raise TypeError(f"{quoted(name)} is {describe(init)} before the loop{where(origin)} and a tensor "
                                f"after one iteration, and the loop body updates state: a graph loop variable "
                                f"keeps its type, and the first iteration would read the Variable where the body "
                                f"left it. Give it the value to start from before the loop (`{name} = "
                                f"{name}.read_value()`), or keep the Variable and the tensor in two names.")
            if not (out is init or (type(out) is type(init) and _safe_eq(out, init))):
                if leaf_kind(out) in (Leaf.TENSOR, Leaf.SCALAR, Leaf.PYSCALAR) and init is None:
                    raise ValueError(f"{quoted(name)} is None before the loop{where(origin)} but becomes "
                                     f"{describe(out)} in it; give it an initial value of that type before the "
                                     f"loop.")
                raise TypeError(f"{quoted(name)} does not have the same nested structure after one iteration of the "
                                f"loop{where(origin)}: {describe(init)} before, {describe(out)} after.")
            continue
        lv, ok = carried[i], _raw_kind(r)
        if ok == Leaf.OBJECT:
            if r is None:
                raise ValueError(f"{quoted(name)} is None at the end of the iteration of the loop{where(origin)}.")
            raise TypeError(f"{quoted(name)} does not have the same nested structure after one iteration of the "
                            f"loop{where(origin)}: {lv.type_str()} before, {describe(out)} after.")
        if lv.kind is ValueKind.SCALAR and ok == Leaf.TENSOR:
            changes.promote[i] = r
            continue
        if lv.kind is ValueKind.LIST:
            if ok != Leaf.LIST:
                raise TypeError(f"{quoted(name)} is a list before the loop{where(origin)} but "
                                f"{_raw_words(r, out)} after "
                                f"one iteration.")
            if r.dtype is not None and (lv.dtype is None or not element_fits(r.shape, lv.shape)):
                dtype, shape, device = lists.merge_elements(lv if lv.dtype is not None else None, r,
                                                             f"{quoted(name)} in the loop{where(origin)}")
                changes.refine[i] = Value(lv.name, dtype, shape, device, ValueKind.LIST)
            elif r.dtype is not None and r.dtype != lv.dtype:
                raise TypeError(f"{quoted(name)} holds {lv.dtype} tensors before the loop but {r.dtype} after one "
                                f"iteration{where(origin)}.")
            continue
        if lv.kind is ValueKind.TENSOR and ok in (Leaf.PYSCALAR, Leaf.SCALAR) and number_fits(r, lv):
            ot, oshape = (ValueKind.TENSOR, lv.dtype, lv.device), ()  # converted to a tensor like the variable
        else:
            ot, oshape = value_type(r), (r.shape if isinstance(r, Value) else ())
        if ot[1] != lv.dtype:
            raise TypeError(f"{quoted(name)} has {type_words((lv.kind, lv.dtype, None))} before the loop, but "
                            f"{type_words(ot)} after one iteration{where(origin)}; a graph loop variable keeps "
                            f"its type. Cast it before the loop or inside the body.")
        if lv.kind is ValueKind.TENSOR and not fits_loop_var(state, oshape, lv, tuple(carried.values())):
            if len(oshape) != len(lv.shape):
                raise ValueError(f"{quoted(name)} has shape {shape_words(lv.shape)} before the loop, but shape "
                                 f"{shape_words(oshape)} after one iteration{where(origin)}: a graph loop variable "
                                 f"keeps its rank.")
            changes.relax[i] = tuple(d if same_dim(d, o) else None for d, o in zip(lv.shape, oshape))
    return changes


def _rebinds_tensor_like(init: Any, out: Any, body: Graph) -> bool:
    """Whether a loop variable holding a tensor-like object (a Variable: torch functions read its tensor) before
    the loop is a tensor after one iteration, in a body that updates no state."""
    return (hasattr(type(init), "_ta_graph_value") and not isinstance(init, torch.Tensor)
            and leaf_kind(out) is Leaf.TENSOR and not any(n.stateful for n in walk_nodes(body)))


def _body_outputs(bb: Branch, carried: dict[int, Value], raw: list) -> list[tuple[int, Any]]:
    """(index, graph output) per loop variable, numbers given to a tensor variable converted to tensors."""
    outs = []
    for i, lv in carried.items():
        r = raw[i]
        if lv.kind is ValueKind.TENSOR and _raw_kind(r) in (Leaf.PYSCALAR, Leaf.SCALAR):
            src = bb.state.wrap(r) if isinstance(r, Value) else r
            r = as_tensor_in(bb, src, lv)
        outs.append((i, r))
    return outs


def _while_node(state: Scope, cb: Branch, bb: Branch, carried: dict[int, Value], inits: list,
                iterated: Value | None, required: list[int], names: Sequence[str] | None, bounds: tuple,
                origin: SourceLocation | None, raw: list) -> tuple:
    """Record the `while` node (and the run-time check of `required` variables); return the final values.

    `bounds`: (maximum_iterations, trip_count), each None, an int or a run-time number."""
    max_iter, trips = (state.to_value(b) if is_graph_value(b) else b for b in bounds)
    init_args = []
    for i in carried:
        v = inits[i]
        init_args.append(constant_of(v) if leaf_kind(v) == Leaf.PYSCALAR else state.to_value(v))
    loop_values = tuple(carried.values()) + ((iterated,) if iterated is not None else ())
    if iterated is not None:
        init_args.append(False)
    final: dict[int, Value] = {}
    requires_grad: dict[int, bool] = {}
    finals: dict = {}
    for i, lv in carried.items():
        final[i], requires_grad[i] = final_value(state, lv, inits[i], raw[i], loop_name(names, i),
                                                 tuple(carried.values()), finals)
    final_iterated = iterated_value(state) if iterated is not None else None
    outputs = tuple(final.values()) + ((final_iterated,) if final_iterated is not None else ())
    lifted = unique_values([v for g in (cb.graph, bb.graph) for v in g.inputs if all(v is not lv for lv in loop_values)])
    target = WhileOp(loop_values, max_iter, checks_iteration=iterated is not None, trip_count=trips)
    extra = tuple(target.bound_values())
    op = control_op(target, "while",
                    [n for g in (cb.graph, bb.graph) for n in g.nodes])
    if trips is None and max_iter is None:
        op = replace(op, effects=op.effects | Effect.MAY_NOT_END)
    node = Node(op,
                (tuple(init_args), *lifted, *extra), {}, outputs, pattern=outputs, origin=origin,
                subgraphs=(cb.graph, bb.graph))
    state.add_node(node)
    if final_iterated is not None:
        missing = ", ".join(f"{quoted(loop_name(names, i))}" for i in required)
        check(state.wrap(final_iterated),
              f"loop must iterate at least once to initialize {missing}{where(origin)}", origin)
    return tuple(state.wrap(final[i], requires_grad=requires_grad[i]) if i in final else inits[i]
                 for i in range(len(inits)))


def _safe_eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _cond_output(cb: Branch, pred: Any, origin: SourceLocation | None) -> Any:
    """The condition graph's output: a graph bool (checked to hold one element) or a Python bool."""
    if isinstance(pred, Value):
        check_predicate(pred, "while loop", origin)
        return pred
    return bool(pred)


